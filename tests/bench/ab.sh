#!/bin/bash
# Before and after in one GPU call (docs/benchmarks.md, "Before and after"):
# commits built side by side on the GPU machine and measured in alternated
# rounds, so that the card's clocks and temperature drift over all of them
# alike.
#
# Here, from the project's root (each commit as a git archive in
# .gpudata/ab/; the first is the baseline):
#   tests/bench/ab.sh pack before=HEAD~1 after=HEAD
# On the GPU machine, with .devkit and .gpudata carried:
#   tests/bench/ab.sh run ROUNDS -- COMMAND [ARGS...]
# builds every packed commit in /tmp/ab/NAME (make -j RT_SKIP_DEPS=1
# $AB_TARGETS), links its build/ext to the carried scenes (.gpudata/*.tar.xz,
# unpacked once), then, ROUNDS times, runs COMMAND in each commit's folder in
# turn. Logs: $OUT/ab/NAME_ROUND.log (and build_NAME.log), packed into
# $OUT/ab.tgz (the device tool brings back few files); the lines of each log
# that match AB_GREP (an extended regular expression) are printed.
#   AB_TARGETS  what to build (default build/tests/bench_gpu_kd)
#   AB_GREP     the lines to print per run (default: the exact builder's row)
#   AB_TIMEOUT  seconds a run may take (default 300)
#   AB_FIELD    the field of a matched line (split at '|') the summary
#               at the end takes per commit and line: lowest, median,
#               highest over the rounds (default 3: bench_gpu_kd's GPU ms)
set -o pipefail
dir=.gpudata/ab

pack() {
    [ -d .git ] || { echo "ab: run this from the project's root" >&2; exit 1; }
    [ $# -ge 1 ] || { echo "ab: pack NAME=REV ..." >&2; exit 1; }
    rm -rf "$dir" && mkdir -p "$dir"
    grep -qx "/.gpudata/" .git/info/exclude 2>/dev/null || echo "/.gpudata/" >> .git/info/exclude
    local i=0
    for spec in "$@"; do
        [[ $spec == *=* ]] || { echo "ab: '$spec': NAME=REV" >&2; exit 1; }
        local name=${spec%%=*} rev=${spec#*=}
        case "$name" in '' | *[!A-Za-z0-9_-]*) echo "ab: '$spec': NAME=REV, NAME of letters, digits, - and _" >&2; exit 1 ;; esac
        git rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "ab: $rev is not a commit" >&2; exit 1; }
        git archive "$rev" | gzip > "$dir/$(printf %02d $i)_$name.tgz" || exit 1
        echo "ab: $name = $(git log -1 --format='%h %s' "$rev" | cut -c1-80)"
        i=$((i + 1))
    done
}

run() {
    local rounds=$1
    shift
    [ "$1" = -- ] && shift
    case "$rounds" in '' | *[!0-9]*) echo "ab: run ROUNDS -- COMMAND" >&2; exit 1 ;; esac
    [ $# -ge 1 ] || { echo "ab: run ROUNDS -- COMMAND" >&2; exit 1; }
    ls "$dir"/*.tgz >/dev/null 2>&1 || { echo "ab: nothing packed in $dir (tests/bench/ab.sh pack ...)" >&2; exit 1; }
    local out=${OUT:-/tmp}/ab top=$PWD names=() jobs=$(( $(nproc) / $(ls "$dir"/*.tgz | wc -l) ))
    [ "$jobs" -ge 1 ] || jobs=1
    mkdir -p "$out" /tmp/ab/ext
    [ -f .devkit/setup.sh ] && source .devkit/setup.sh >/dev/null 2>&1
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee "$out/gpu.txt"
    for a in .gpudata/*.tar.xz; do [ -f "$a" ] && tar xJf "$a" -C /tmp/ab/ext; done
    for t in "$dir"/*.tgz; do
        local name=$(basename "$t" .tgz)
        name=${name#*_}
        names+=("$name")
        rm -rf "/tmp/ab/$name" && mkdir -p "/tmp/ab/$name" && tar xzf "$t" -C "/tmp/ab/$name"
        [ -d .devkit ] && cp -r .devkit "/tmp/ab/$name/"
        (cd "/tmp/ab/$name" && make -j"$jobs" RT_SKIP_DEPS=1 ${AB_TARGETS:-build/tests/bench_gpu_kd} \
            > "$out/build_$name.log" 2>&1 && mkdir -p build && ln -sfn /tmp/ab/ext build/ext) &
    done
    local failed=0
    for j in $(jobs -p); do wait "$j" || failed=1; done
    [ $failed = 0 ] || { echo "ab: a build failed (build_*.log)"; tail -n 5 "$out"/build_*.log; tar czf "$out.tgz" -C "$(dirname "$out")" ab; exit 1; }
    local grep=${AB_GREP:-'^\| exact SAH \(Kolodzey\), exact clips'}
    for r in $(seq 1 "$rounds"); do
        for name in "${names[@]}"; do
            (cd "/tmp/ab/$name" && RT_TEST_EXT=build/ext timeout "${AB_TIMEOUT:-300}" "$@" > "$out/${name}_$r.log" 2>&1)
            echo "== $name, round $r (rc $?)"
            grep -E "$grep" "$out/${name}_$r.log"
        done
    done
    summary "$out" "$grep" "$rounds" "${names[@]}"
    tar czf "$out.tgz" -C "$(dirname "$out")" ab && rm -rf "$out"
    cd "$top"
}

# Per commit, per matched line (the k-th of each round's log: a scene),
# the rounds' lowest, median and highest value of field AB_FIELD (split
# at '|'; default 3, the GPU ms of bench_gpu_kd's rows).
summary() {
    local out=$1 grep=$2 rounds=$3
    shift 3
    echo "== summary (field ${AB_FIELD:-3}: lowest / median / highest of $rounds rounds)"
    for name in "$@"; do
        for r in $(seq 1 "$rounds"); do
            grep -E "$grep" "$out/${name}_$r.log" | awk -F'|' -v f="${AB_FIELD:-3}" '{ gsub(/ /, "", $f); print NR, $f }'
        done | sort -k1,1n -k2,2g | awk -v name="$name" '
            function flush() { if (n) printf "%s row %d: %s / %s / %s\n", name, row, v[1], v[int((n + 1) / 2)], v[n] }
            $1 != row { flush(); row = $1; n = 0 }
            { v[++n] = $2 }
            END { flush() }'
    done
}

case "$1" in
pack) shift; pack "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 1 ;;
esac
