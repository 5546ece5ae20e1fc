#!/bin/sh
# Runs every test binary given on the command line (cmocka), the window test
# under Xvfb (tests/test_viewer.sh), then the GPU tests when a GPU is present
# and a short bounded fuzz run; prints one summary line
# "tests: N passed, N failed, N skipped" and exits non-zero on any failure.
ASSETS=${RT_ASSETS:-../shared/assets}
EXT=build/ext
if [ -d "$ASSETS" ]; then
    for a in "$ASSETS"/*.tar.xz; do
        name=$(basename "$a" .tar.xz)
        stamp="$EXT/.$name.unpacked"
        [ -f "$stamp" ] && continue
        mkdir -p "$EXT" && tar xJf "$a" -C "$EXT" && touch "$stamp"
    done
else
    echo "tests: $ASSETS is absent: tests on real scenes will be skipped"
fi
export RT_TEST_EXT="$EXT"

pass=0; fail=0; skip=0; failed_bins=""
for bin in "$@"; do
    log=$(mktemp)
    echo "== $bin"
    CMOCKA_MESSAGE_OUTPUT=stdout "$bin" >"$log" 2>&1
    rc=$?
    cat "$log"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    pass=$((pass + ${p:-0})); skip=$((skip + ${s:-0}))
    if [ $rc -ne 0 ] && [ -z "$f" ]; then f=1; fi   # crashed before its summary
    fail=$((fail + ${f:-0}))
    [ $rc -ne 0 ] && failed_bins="$failed_bins $bin"
    rm -f "$log"
done

# The window under Xvfb with Mesa: 0 passed, 77 skipped (no Xvfb), else failed.
echo "== tests/test_viewer.sh"
sh tests/test_viewer.sh
case $? in
    0) pass=$((pass + 1)) ;;
    77) skip=$((skip + 1)) ;;
    *) fail=$((fail + 1)); failed_bins="$failed_bins tests/test_viewer.sh" ;;
esac

# No loops between modules: which object file calls which, from the archives.
echo "== tests/module_graph.py"
if python3 tests/module_graph.py build/librt.a build/librtgpu.a; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); failed_bins="$failed_bins tests/module_graph.py"
fi

# GPU tests need a GPU: run them when nvidia-smi sees one, else say so.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
    if ./rtviewer --gpu-info >/dev/null 2>&1; then
        echo "tests: GPU present: $(./rtviewer --gpu-info 2>&1 | head -1)"
    fi
else
    echo "tests: no NVIDIA GPU on this machine: GPU tests skipped"
fi

# A short, bounded fuzz run over the loaders (the corpus grows in build/).
[ -x build/fuzz_loaders ] || echo "fuzz: skipped (no clang here to build build/fuzz_loaders)"
if [ -x build/fuzz_loaders ] && [ "${RT_FUZZ_SECONDS:-30}" -gt 0 ]; then
    mkdir -p build/fuzz_corpus
    echo "== fuzz: ${RT_FUZZ_SECONDS:-30} s over the loaders"
    if build/fuzz_loaders -max_total_time="${RT_FUZZ_SECONDS:-30}" -rss_limit_mb=2048 \
        -timeout=10 -artifact_prefix=build/ build/fuzz_corpus tests/fuzz/corpus \
        >build/fuzz.log 2>&1; then
        pass=$((pass + 1)); echo "fuzz: no crash ($(grep -c . build/fuzz.log) log lines)"
    else
        fail=$((fail + 1)); failed_bins="$failed_bins fuzz"; tail -40 build/fuzz.log
    fi
fi

[ -n "$failed_bins" ] && echo "tests: failing:$failed_bins"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
