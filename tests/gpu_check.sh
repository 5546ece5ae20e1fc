#!/bin/bash
# The GPU machine's check of a change (docs/benchmarks.md): builds, runs the
# whole suite with its GPU tests, then renders the default scene and Crytek
# Sponza headless on the GPU path and on the CPU path for comparison.
# Usage there, with .devkit (and optionally .gpudata/*.tar.xz: the assets) carried:
#   bash tests/gpu_check.sh            # logs and PNGs go to $OUT (or /tmp/gpu_check)
set -o pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
source .devkit/setup.sh >/dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 RT_SKIP_DEPS=1 all >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
# the real scenes: the carried archives (.gpudata/*.tar.xz, copies of
# ../shared/assets), unpacked by tests/run.sh into build/ext
[ -d ../shared/assets ] || export RT_ASSETS=${RT_ASSETS:-.gpudata}
RT_FUZZ_SECONDS=${RT_FUZZ_SECONDS:-0} make -j16 RT_SKIP_DEPS=1 test >"$OUT/test.log" 2>&1
echo "make test rc=$?"
grep -E "^== |^\[  (PASSED|FAILED|SKIPPED) \]|^tests:|GPU|skip:" "$OUT/test.log" | grep -v "^\[  SKIPPED \] [a-z]" | tail -60
run() { echo "\$ ./rtviewer $*"; ./rtviewer "$@" 2>&1 | grep -v "^OBJ: warning" | tail -4; }
run --headless --size 1280x720 --frames 5 --stats -o /tmp/default_gpu.png && cp /tmp/default_gpu_0004.png "$OUT/default_gpu.png"
run --headless --size 1280x720 --cpu -o /tmp/default_cpu.png
if [ -f build/ext/sponza/sponza.obj ]; then
    cam=110,20,-4,-50,40,0,0,1,0,60
    run build/ext/sponza/sponza.obj --headless --size 1920x1080 --frames 10 --stats --camera $cam -o /tmp/sponza_gpu.png && cp /tmp/sponza_gpu_0009.png "$OUT/sponza_gpu.png"
    run build/ext/sponza/sponza.obj --headless --size 1920x1080 --cpu --camera $cam -o "$OUT/sponza_cpu.png"
fi
if [ -f build/ext/bart/kitchen/aff/kitchen.aff ]; then
    run build/ext/bart/kitchen/aff/kitchen.aff --headless --size 1920x1080 --frames 10 --stats -o /tmp/kitchen_gpu.png && cp /tmp/kitchen_gpu_0009.png "$OUT/kitchen_gpu.png"
    run build/ext/bart/kitchen/aff/kitchen.aff --headless --size 1920x1080 --cpu --time 20 -o "$OUT/kitchen_cpu.png"
fi
# The window on NVIDIA's GLX (setup.sh started Xvfb :99 when the display kit
# was carried): the viewer test requiring interop, and a screenshot.
if [ -n "$DISPLAY" ] && command -v xdotool >/dev/null; then
    RT_DISPLAY=$DISPLAY RT_EXPECT_INTEROP=1 timeout 120 sh tests/test_viewer.sh 2>&1 | tail -12
    rm -rf /tmp/shots && mkdir -p /tmp/shots
    timeout 60 ./rtviewer --size 1280x720 --screenshot-dir /tmp/shots >/tmp/shots.log 2>&1 &
    w=$(timeout 20 xdotool search --sync --onlyvisible --name '^rtviewer' | head -1)
    xdotool windowfocus --sync "$w"; sleep 4; xdotool key F12; sleep 1; xdotool key Escape; wait
    cp /tmp/shots/*.png "$OUT/viewer.png" 2>/dev/null
    grep -E "GL|interop" /tmp/shots.log | head -5
fi
