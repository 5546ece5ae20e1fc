#!/bin/sh
# Soak: N headless frames of an animated scene in one process, its resident
# memory (VmRSS, /proc/PID/status) sampled every second; reports the first,
# last and peak RSS and whether memory stayed flat, and exits non-zero when
# it did not (or the run failed). docs/reliability.md has the figures.
#   SOAK_FRAMES   frames (default 300)
#   SOAK_SCENE    scene (default scenes/runners.scene: 4 walking figures)
#   SOAK_SIZE     frame size (default 160x90)
#   SOAK_BACKEND  --cpu (default) or --gpu (the GPU pipeline, with its CPU fallback)
#   SOAK_FLAT_KB  "flat": last - first below this (default 8192 kB, or 5 %
#                 of first if larger). Samples start once frame 1 has ended
#                 (loading and the first frame's allocations are not
#                 growth); a sample falls anywhere inside a frame, whose
#                 build and trace allocate and free, so "first" and "last"
#                 are the highest sample of the first and of the last
#                 quarter of the samples (a frame's high-water mark), not
#                 two single samples.
#   SOAK_WINDOW=1 the window instead of headless (needs a display: DISPLAY,
#                 e.g. Xvfb with NVIDIA's GLX on the GPU machine): rtviewer
#                 --frames N closes it after N frames; sampling starts 3 s in
#   SAN=1         run build-san-cpu/rtviewer (AddressSanitizer + UBSan,
#                 LeakSanitizer at exit: a leak fails the soak), built here
#                 with `make SAN=1 NVCC= BUILD=build-san-cpu` if missing
#   RTVIEWER      the binary (default ./rtviewer, or the SAN one)
# With --gpu and nvidia-smi present, the GPU's memory in use (the whole
# device's: a container may not map the process's PID) is sampled beside
# RSS and judged the same way (flat: below SOAK_FLAT_GPU_MB, default 64 MiB).
# Every frame writes a PNG (rtviewer's headless loop); they go to a temporary
# folder and are deleted as the soak goes.
FRAMES=${SOAK_FRAMES:-300}
SCENE=${SOAK_SCENE:-scenes/runners.scene}
SIZE=${SOAK_SIZE:-160x90}
BACKEND=${SOAK_BACKEND:---cpu}
GPUMEM=0
[ "$BACKEND" = --gpu ] && BACKEND="" && command -v nvidia-smi >/dev/null 2>&1 && GPUMEM=1
if [ "${SAN:-0}" = 1 ]; then
    BIN=${RTVIEWER:-build-san-cpu/rtviewer}
    if [ ! -x "$BIN" ]; then
        echo "soak: building $BIN (SAN=1, CPU backend only)"
        make --no-print-directory SAN=1 NVCC= BUILD=build-san-cpu build-san-cpu/rtviewer >/dev/null || exit 1
    fi
    # LeakSanitizer reports at exit; the exit status says whether it found any.
    # stdbuf (below) preloads its library ahead of the ASan runtime
    export ASAN_OPTIONS="detect_leaks=1:exitcode=23:verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
else
    BIN=${RTVIEWER:-./rtviewer}
fi
[ -x "$BIN" ] || { echo "soak: $BIN is not built (make all)"; exit 1; }

DIR=$(mktemp -d /tmp/rt_soak.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
LOG=$DIR/log
# line-buffered, so "frame 1/N" shows when frame 1 ends
if [ "${SOAK_WINDOW:-0}" = 1 ]; then
    stdbuf -oL -eL "$BIN" "$SCENE" $BACKEND --frames "$FRAMES" --size "$SIZE" >"$LOG" 2>&1 &
    PID=$!
    echo "soak: $BIN $SCENE (window) $BACKEND --frames $FRAMES --size $SIZE (pid $PID)"
else
    stdbuf -oL -eL "$BIN" "$SCENE" --headless $BACKEND --frames "$FRAMES" --size "$SIZE" -o "$DIR/f.png" >"$LOG" 2>&1 &
    PID=$!
    echo "soak: $BIN $SCENE --headless $BACKEND --frames $FRAMES --size $SIZE (pid $PID)"
fi

t0=$(date +%s)
first="" last="" peak=0 samples=0 frames_at_first=0
while kill -0 "$PID" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status" 2>/dev/null)
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$PID/status" 2>/dev/null)
    done_frames=$(grep -c '^frame ' "$LOG")
    # the window prints no per-frame line: from 3 s in, count it as started
    [ "${SOAK_WINDOW:-0}" = 1 ] && [ $(($(date +%s) - t0)) -ge 3 ] && done_frames=1
    if [ -n "$rss" ]; then
        if [ -z "$first" ] && [ "$done_frames" -ge 1 ]; then first=$rss; frames_at_first=$done_frames; fi
        if [ -n "$first" ]; then
            last=$rss; last_frames=$done_frames; samples=$((samples + 1))
            echo "$rss" >>"$DIR/rss"
            [ $GPUMEM = 1 ] && nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 >>"$DIR/gpu" 2>/dev/null
        fi
        [ "${hwm:-0}" -gt "$peak" ] && peak=$hwm
    fi
    find "$DIR" -name 'f_*.png' -delete 2>/dev/null
    sleep 1
done
wait "$PID"
rc=$?
secs=$(($(date +%s) - t0))
done_frames=$(grep -c '^frame ' "$LOG")
[ "${SOAK_WINDOW:-0}" = 1 ] && done_frames=$(sed -n 's/^window: \([0-9]*\) frames.*/\1/p' "$LOG")
grep -E 'SCENE: .*triangles|backend:|median frame|^window:|interop' "$LOG" | sed 's/^/soak:   /'
if [ "$rc" -ne 0 ]; then
    echo "soak: FAILED: rtviewer exited $rc after $done_frames of $FRAMES frames; its last lines:"
    grep -v '^frame ' "$LOG" | tail -40
    exit 1
fi
if [ -z "$first" ] || [ "$samples" -lt 2 ]; then
    echo "soak: $done_frames frames in $secs s: too short to sample (raise SOAK_FRAMES)"
    exit 0
fi
# the highest sample of the first and of the last quarter
q=$(((samples + 3) / 4))
first=$(head -n "$q" "$DIR/rss" | sort -n | tail -1)
last=$(tail -n "$q" "$DIR/rss" | sort -n | tail -1)
if [ "${SAN:-0}" = 1 ]; then
    # ASan's quarantine holds freed memory (up to 256 MB) before reuse, so
    # RSS climbs by design: the leak check at exit is the verdict.
    echo "soak: $done_frames frames in $secs s; RSS first $first kB, last $last kB, peak $peak kB (not judged under ASan: its quarantine holds freed memory)"
    echo "soak: LeakSanitizer: no leaks at exit, AddressSanitizer/UBSan: no reports"
    exit 0
fi
bound=${SOAK_FLAT_KB:-$((first / 20 > 8192 ? first / 20 : 8192))}
growth=$((last - first))
echo "soak: $done_frames frames in $secs s, $samples RSS samples from frame $frames_at_first to $last_frames (quarters of $q)"
echo "soak: RSS first quarter max $first kB, last quarter max $last kB, peak $peak kB (VmHWM); growth $growth kB (flat: below $bound kB)"
if [ "$growth" -ge "$bound" ]; then
    echo "soak: NOT FLAT: RSS grew $growth kB over $((last_frames - frames_at_first)) frames"
    exit 1
fi
if [ $GPUMEM = 1 ] && [ -s "$DIR/gpu" ]; then
    gq=$((($(wc -l <"$DIR/gpu") + 3) / 4))
    gfirst=$(head -n "$gq" "$DIR/gpu" | sort -n | tail -1)
    glast=$(tail -n "$gq" "$DIR/gpu" | sort -n | tail -1)
    gpeak=$(sort -n "$DIR/gpu" | tail -1)
    gbound=${SOAK_FLAT_GPU_MB:-64}
    echo "soak: GPU memory in use (device): first quarter max $gfirst MiB, last quarter max $glast MiB, peak $gpeak MiB; growth $((glast - gfirst)) MiB (flat: below $gbound MiB)"
    if [ $((glast - gfirst)) -ge "$gbound" ]; then
        echo "soak: NOT FLAT: GPU memory grew $((glast - gfirst)) MiB"
        exit 1
    fi
fi
echo "soak: flat"
