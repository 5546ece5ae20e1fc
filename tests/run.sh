#!/bin/sh
# Runs every test binary given on the command line (cmocka), the window test
# under Xvfb (tests/test_viewer.sh), the module graph check and the BVH
# kernels' stack frames (tests/kernel_frames.sh), RT_TEST_JOBS
# at a time (default: the number of cores), then the GPU tests when a GPU is
# present and a short bounded fuzz run; prints one summary line
# "tests: N passed, N failed, N skipped" and exits non-zero on any failure.
# Each program's output is printed whole when it ends, under a line
# "== NAME (T s, N passed, N failed, N skipped; K of M done)", so parallel
# programs never interleave and a slow one shows it is the one still running.
#   RT_BUILD      the build folder of this configuration (default build)
#   RT_TEST_JOBS  programs run at once (default: nproc)
#   RT_FUZZ_SECONDS  length of the fuzz run (default 30; 0 skips it)
BUILD=${RT_BUILD:-build}
ASSETS=${RT_ASSETS:-../shared/assets}
# Assets are unpacked once, into build/ext, whatever the configuration: the
# README's examples and every build folder read them there.
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
export RT_TEST_EXT="$EXT" RT_BUILD="$BUILD"

JOBS=${RT_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
OUTDIR=$(mktemp -d /tmp/rt_tests.XXXXXX)
trap 'rm -rf "$OUTDIR"' EXIT
# Durations of the last run, slowest first next time, so the long programs
# start at once and the short ones fill the other slots around them.
TIMES=$BUILD/tests/.durations

# One job: "cmocka BIN", "viewer" or "graph". Writes OUTDIR/N.{log,rc,sec,sum}
# and prints the log under its header, holding a lock while it prints.
cat >"$OUTDIR/job.sh" <<'EOF'
#!/bin/sh
idx=$1 kind=$2 name=$3 out=$4 total=$5
log=$out/$idx.log
t0=$(date +%s.%N)
case $kind in
    cmocka) CMOCKA_MESSAGE_OUTPUT=stdout "$name" >"$log" 2>&1 ;;
    viewer) sh tests/test_viewer.sh >"$log" 2>&1 ;;
    graph) python3 tests/module_graph.py "$RT_BUILD/librt.a" "$RT_BUILD/librtgpu.a" >"$log" 2>&1 ;;
    frames) sh tests/kernel_frames.sh >"$log" 2>&1 ;;
esac
rc=$?
t1=$(date +%s.%N)
sec=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')
if [ "$kind" = cmocka ]; then
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    if [ $rc -ne 0 ] && [ -z "$f" ]; then f=1; fi   # crashed before its summary
elif [ "$kind" = viewer ] || [ "$kind" = frames ]; then   # 0 passed, 77 skipped (no Xvfb / nvcc), else failed
    p=0 f=0 s=0
    case $rc in 0) p=1 ;; 77) s=1; rc=0 ;; *) f=1 ;; esac
else
    p=0 f=0 s=0
    if [ $rc -eq 0 ]; then p=1; else f=1; fi
fi
echo "${p:-0} ${f:-0} ${s:-0} $rc" >"$out/$idx.sum"
echo "$sec" >"$out/$idx.sec"
(
    flock 9
    ndone=$(($(cat "$out/done") + 1)); echo $ndone >"$out/done"
    echo "== $name ($sec s, ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped; $ndone of $total done)"
    cat "$log"
) 9>"$out/lock"
EOF

# The job list, slowest first by the last run's times.
i=0
for bin in "$@"; do
    i=$((i + 1))
    prev=$(awk -v b="$bin" '$2 == b {print $1}' "$TIMES" 2>/dev/null | tail -1)
    echo "${prev:-0} $i cmocka $bin"
done >"$OUTDIR/jobs.unsorted"
echo "0 $((i + 1)) viewer tests/test_viewer.sh" >>"$OUTDIR/jobs.unsorted"
# No loops between modules: which object file calls which, from the archives.
echo "0 $((i + 2)) graph tests/module_graph.py" >>"$OUTDIR/jobs.unsorted"
# No stack frame in the BVH builders' kernels (ptxas's report).
echo "0 $((i + 3)) frames tests/kernel_frames.sh" >>"$OUTDIR/jobs.unsorted"
total=$((i + 3))
sort -k1,1nr -k2,2n "$OUTDIR/jobs.unsorted" >"$OUTDIR/jobs"
echo 0 >"$OUTDIR/done"
echo "tests: $total programs, $JOBS at a time"
t_start=$(date +%s)
awk '{print $2, $3, $4}' "$OUTDIR/jobs" |
    xargs -P "$JOBS" -L 1 sh -c 'sh "$0/job.sh" "$1" "$2" "$3" "$0" '"$total" "$OUTDIR"

pass=0; fail=0; skip=0; failed_bins=""
mkdir -p "$BUILD/tests"
: >"$TIMES.new"
while read -r _ idx kind name; do
    if [ ! -f "$OUTDIR/$idx.sum" ]; then   # the job itself could not run
        fail=$((fail + 1)); failed_bins="$failed_bins $name"; continue
    fi
    read -r p f s rc <"$OUTDIR/$idx.sum"
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    [ "$rc" -ne 0 ] && failed_bins="$failed_bins $name"
    echo "$(cat "$OUTDIR/$idx.sec") $name" >>"$TIMES.new"
done <"$OUTDIR/jobs"
mv "$TIMES.new" "$TIMES"
echo "tests: the programs took $(($(date +%s) - t_start)) s (slowest: $(sort -k1,1nr "$TIMES" | head -3 | awk '{printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1}'))"

# GPU tests need a GPU: run them when nvidia-smi sees one, else say so.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
    if ./rtviewer --gpu-info >/dev/null 2>&1; then
        echo "tests: GPU present: $(./rtviewer --gpu-info 2>&1 | head -1)"
    fi
else
    echo "tests: no NVIDIA GPU on this machine: GPU tests skipped"
fi

# A short, bounded fuzz run over the loaders (the corpus grows in $BUILD/).
FUZZ=$BUILD/fuzz_loaders
[ -x "$FUZZ" ] || echo "fuzz: skipped ($FUZZ is not built: make fuzz, which needs clang)"
if [ -x "$FUZZ" ] && [ "${RT_FUZZ_SECONDS:-30}" -gt 0 ]; then
    mkdir -p "$BUILD/fuzz_corpus"
    echo "== fuzz: ${RT_FUZZ_SECONDS:-30} s over the loaders"
    if "$FUZZ" -max_total_time="${RT_FUZZ_SECONDS:-30}" -rss_limit_mb=2048 \
        -timeout=10 -artifact_prefix="$BUILD/" "$BUILD/fuzz_corpus" tests/fuzz/corpus \
        >"$BUILD/fuzz.log" 2>&1; then
        pass=$((pass + 1)); echo "fuzz: no crash ($(grep -c . "$BUILD/fuzz.log") log lines)"
    else
        fail=$((fail + 1)); failed_bins="$failed_bins fuzz"; tail -40 "$BUILD/fuzz.log"
    fi
fi

# The AFF and glTF fuzzers' kept corpora, replayed (each input once: a few
# seconds); fuzz_gltf is built where libcjson is (make fuzz).
replay() { # NAME LABEL: $BUILD/NAME over tests/fuzz/corpus_<LABEL>
    bin=$BUILD/$1 corpus=tests/fuzz/corpus_$2
    [ -x "$bin" ] && [ "${RT_FUZZ_SECONDS:-30}" -gt 0 ] || return 0
    echo "== fuzz: $corpus replayed"
    if "$bin" -runs=0 -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$BUILD/" "$corpus" >"$BUILD/$1.log" 2>&1; then
        pass=$((pass + 1)); echo "fuzz: $corpus replayed, no crash ($(ls "$corpus" | wc -l) inputs)"
    else
        fail=$((fail + 1)); failed_bins="$failed_bins $1"; tail -40 "$BUILD/$1.log"
    fi
}
replay fuzz_aff aff
replay fuzz_gltf gltf

[ -n "$failed_bins" ] && echo "tests: failing:$failed_bins"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
