#!/bin/bash
# make scaling: build ms, references and frame ms against triangle count
# (issues 20 and 21). rtviewer --bench per structure over two families of
# scenes, 0.1M .. 20M triangles:
#   grid  a one-line .scene `wavegrid N` (rt_scene_make_wave: one deforming
#         grid, its own camera and light), N in $SIZES
#   city  tests/bench/make_city.sh K: K copies of Crytek Sponza and ceil(K/4)
#         bunnies, a quarter of them moving (scenes/city.scene's recipe), K in $CITIES
# and, with .peers/nexus (../shared/peers/README.md), the peer H-PLOC
# builder on the same sizes of bench_gpu_kd's wavy grid. Writes per run
# $BENCH_OUT/NAME.{json,csv,log}, then scaling.dat (+ .csv), scaling.md and
# three gnuplot PNGs (log-log; grid solid, city dashed), and splices the
# table and the plots into docs/benchmarks.md between its scaling:begin and
# scaling:end marker comments (nothing else there is touched).
#
# Knobs (environment):
#   RTVIEWER=./rtviewer  BENCH_OUT=build/bench/scaling  RT_TEST_EXT=build/ext (Sponza, bunny)
#   SIZES="100000 ... 20000000"  grid triangle counts    CITIES="1 4 12 38 76"  Sponza copies
#   STRUCTS="kd lbvh bvh"        BENCH_FRAMES=5  BENCH_WARMUP=2  BENCH_SIZE=1920x1080
#   SCALING_PEER=.peers/nexus/run.sh  PEER_ARGS="--runs 10 --warmup 3 --delay-ms 0"
#   SCALING_TIMEOUT=600          seconds a run may take
#   BENCH_DOCS=0                 leave docs/ alone (everything stays in $BENCH_OUT)
#   BENCH_REUSE=1                no runs: tables and plots from $BENCH_OUT's results
#   BENCH_DOC / BENCH_IMG        where the table / plots go (docs/benchmarks.md, docs/img)
# `scaling.sh --cpu` (or no usable GPU) runs the CPU path at tiny sizes
# (SIZES="20000 50000", CITIES=1, 64x36, 1 + 2 frames) to check the script,
# not to measure: every table says so, and the peer is not run.
#
# Every run validates its first tree on the host before it times anything
# (rtviewer --bench has no switch to skip it): a kd-tree's about 1.2 s per
# million triangles on 16 threads (scenes/city.scene, 12.2M: 14.4 s), so the
# 21M city's about 25 s, a BVH's far less; about a minute of the sweep. The
# whole GPU sweep, the peer included: about 5 minutes on an H200.
set -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RTVIEWER=${RTVIEWER:-./rtviewer}
OUT=${BENCH_OUT:-build/bench/scaling}
EXT=${RT_TEST_EXT:-build/ext}
DOC=${BENCH_DOC:-docs/benchmarks.md}
IMG=${BENCH_IMG:-docs/img}
PEER=${SCALING_PEER:-.peers/nexus/run.sh}
PEER_ARGS=${PEER_ARGS:-"--runs 10 --warmup 3 --delay-ms 0"}
LIMIT=${SCALING_TIMEOUT:-600}
STRUCTS=${STRUCTS:-"kd lbvh bvh"}
FORCE_CPU=""; [ "$1" = --cpu ] && FORCE_CPU=1
mkdir -p "$OUT"
T0=$(date +%s)

# ---- mode: GPU numbers only on a GPU -----------------------------------------
if [ -n "$BENCH_REUSE" ]; then
    any=$(ls "$OUT"/*.json 2>/dev/null | head -1)
    [ -n "$any" ] || { echo "scaling: BENCH_REUSE=1 but no JSON in $OUT"; exit 1; }
    grep -qs '"backend": "gpu"' "$any" && gpuline="(results in $OUT)"
elif [ ! -x "$RTVIEWER" ]; then
    echo "scaling: $RTVIEWER not built (make first)"; exit 1
elif [ -z "$FORCE_CPU" ]; then
    gpuline=$("$RTVIEWER" --gpu-info 2>/dev/null) || gpuline=""
    [ -n "$gpuline" ] && echo "$gpuline" >"$OUT/gpu-info.txt"
fi
if [ -n "$gpuline" ]; then
    MODE=gpu
    SIZES=${SIZES:-"100000 300000 1000000 3000000 10000000 20000000"}; CITIES=${CITIES:-"1 4 12 38 76"}
    FRAMES=${BENCH_FRAMES:-5}; WARMUP=${BENCH_WARMUP:-2}; SIZE=${BENCH_SIZE:-1920x1080}
    PATHFLAG=""
    echo "scaling: GPU path on $gpuline"
else
    MODE=cpu
    SIZES=${SIZES:-"20000 50000"}; CITIES=${CITIES:-1}
    FRAMES=${BENCH_FRAMES:-2}; WARMUP=${BENCH_WARMUP:-1}; SIZE=${BENCH_SIZE:-64x36}
    PATHFLAG="--cpu"
    echo "scaling: CPU path at $SIZE ($([ -n "$FORCE_CPU" ] && echo "--cpu" || echo "no usable GPU here")):"
    echo "scaling: CPU wall-clock numbers to check the script, not GPU numbers"
fi

# ---- scenes --------------------------------------------------------------------
# ../shared/assets unpacked as tests/bench/run.sh does (once, into build/ext)
ASSETS=${RT_ASSETS:-../shared/assets}
if [ -z "$BENCH_REUSE" ] && [ -z "$RT_TEST_EXT" ] && [ -d "$ASSETS" ]; then
    for a in "$ASSETS"/*.tar.xz; do
        stamp="$EXT/.$(basename "$a" .tar.xz).unpacked"
        [ -f "$stamp" ] || { mkdir -p "$EXT" && tar xJf "$a" -C "$EXT" && touch "$stamp"; }
    done
fi
if [ -z "$BENCH_REUSE" ] && { [ ! -f "$EXT/sponza/sponza.obj" ] || [ ! -f "$EXT/models/bunny.obj" ]; }; then
    echo "scaling: $EXT/sponza/sponza.obj or $EXT/models/bunny.obj absent: the city family skipped"
    CITIES=""
fi

FAILED=""; REFUSED=""
# bench NAME SCENE [rtviewer options...]: one run -> $OUT/NAME.{json,csv,log}
bench() {
    local name=$1 scene=$2; shift 2
    if [ -n "$BENCH_REUSE" ]; then
        [ -f "$OUT/$name.json" ] && return 0
        if grep -qs "SCENE: expected an integer triangle count" "$OUT/$name.log"; then REFUSED="$REFUSED $name"
        else FAILED="$FAILED $name"; fi
        return 1
    fi
    echo "scaling: $name: $RTVIEWER --bench $scene $* --size $SIZE --frames $FRAMES --warmup $WARMUP $PATHFLAG"
    local t=$(date +%s)
    if ! timeout "$LIMIT" "$RTVIEWER" --bench "$scene" "$@" --size "$SIZE" --frames "$FRAMES" --warmup "$WARMUP" \
        $PATHFLAG --json "$OUT/$name.json" --csv "$OUT/$name.csv" >"$OUT/$name.log" 2>&1; then
        rm -f "$OUT/$name.json" "$OUT/$name.csv"
        # a size the .scene loader refuses is a limit, not a failure
        if grep -q "SCENE: expected an integer triangle count" "$OUT/$name.log"; then
            echo "scaling: $name refused: $(grep -m1 SCENE: "$OUT/$name.log")"
            REFUSED="$REFUSED $name"
        else
            echo "scaling: $name FAILED:"; tail -5 "$OUT/$name.log"
            FAILED="$FAILED $name"
        fi
        return 1
    fi
    grep -E "^median|validated" "$OUT/$name.log"
    echo "scaling: $name took $(($(date +%s) - t)) s"
}

# ---- the sweep -----------------------------------------------------------------
for n in $SIZES; do
    [ -n "$BENCH_REUSE" ] || echo "wavegrid $n" >"$OUT/grid_$n.scene"
    for st in $STRUCTS; do bench "grid_${n}_$st" "$OUT/grid_$n.scene" --structure "$st"; done
done
for k in $CITIES; do
    # the scene lives in $OUT: absolute mesh paths
    [ -n "$BENCH_REUSE" ] || sh "$HERE/make_city.sh" "$k" "$(cd "$EXT" && pwd)" >"$OUT/city_$k.scene" || exit 1
    for st in $STRUCTS; do bench "city_${k}_$st" "$OUT/city_$k.scene" --structure "$st"; done
done
# the peer: H-PLOC on bench_gpu_kd's wavy grid, a height field like
# wavegrid's but not the same surface (2 floor(sqrt(N/2))^2 triangles against
# wavegrid's 2 round(sqrt(N/2))^2: < 0.1 % apart); run.sh builds it first
if [ -z "$BENCH_REUSE" ] && [ $MODE = gpu ]; then
    if [ -f "$PEER" ]; then
        for n in $SIZES; do
            echo "scaling: peer_grid_$n: $PEER --grid $n $PEER_ARGS"
            timeout "$LIMIT" sh "$PEER" --grid "$n" $PEER_ARGS >"$OUT/peer_grid_$n.log" 2>&1 ||
                { echo "scaling: peer_grid_$n FAILED:"; tail -3 "$OUT/peer_grid_$n.log"; FAILED="$FAILED peer_grid_$n"; }
            grep -E "^nexus " "$OUT/peer_grid_$n.log"
        done
    else
        echo "scaling: $PEER absent: no peer H-PLOC figures (../shared/peers/README.md)"
    fi
fi
[ -n "$BENCH_REUSE" ] || echo "scaling: runs took $(($(date +%s) - T0)) s" | tee "$OUT/elapsed.txt"

# ---- results -------------------------------------------------------------------
# med, js, jo, fmt (results.sh)
. "$HERE/results.sh"
# jstr NAME KEY: a top-level string of NAME's JSON, commas and all (the driver's)
jstr() { [ -f "$OUT/$1.json" ] && sed -n "s/^  \"$2\": \"\(.*\)\",\{0,1\}$/\1/p" "$OUT/$1.json" | head -1; }
# peer N FIELD: a field of the peer's summary lines, by the name its "# nexus"
# or "# nexus_detail" header gives the column
peer() {
    [ -f "$OUT/peer_grid_$1.log" ] || { echo "-"; return; }
    awk -v f="$2" '$1 == "#" && ($2 == "nexus" || $2 == "nexus_detail") { for (i = 3; i <= NF; i++) col[$2, i - 1] = $i }
                   $1 == "nexus" || $1 == "nexus_detail" { for (i = 2; i <= NF; i++) if (col[$1, i] == f) v = $i }
                   END { print v == "" ? "-" : v }' "$OUT/peer_grid_$1.log"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.3f", a / b }'; }

DAT="$OUT/scaling.dat"
{
echo "# family size structure triangles build_ms build_large_ms build_small_ms references refs_per_tri trace_ms frame_ms peak_gpu_mem_mb validate_ms"
for fam in grid city; do
    [ $fam = grid ] && list=$SIZES || list=$CITIES
    for p in $list; do
        for st in $STRUCTS; do n=${fam}_${p}_$st
            [ -f "$OUT/$n.json" ] || continue
            tris=$(js $n triangles); refs=$(jo $n tree references)
            echo "$fam $p $st $tris $(med $n build_ms) $(med $n build_large_ms) $(med $n build_small_ms) $refs $(ratio "$refs" "$tris") $(med $n trace_ms) $(med $n frame_ms) $(js $n peak_gpu_mem_mb) $(jo $n validation ms)"
        done
        # the peer: "BVH2 ready" (bounds .. H-PLOC, the binary BVH) and the
        # whole build with its 8-wide conversion
        if [ $fam = grid ] && [ "$(peer "$p" tris)" != - ]; then
            echo "grid $p hploc-peer $(peer "$p" tris) $(peer "$p" bvh2_ready_med) - - - - - - - -"
            echo "grid $p hploc-peer+bvh8 $(peer "$p" tris) $(peer "$p" total_ms_median) - - - - - - - -"
        fi
    done
done
} >"$DAT"
sed -e '1s/^# //' -e 's/ /,/g' -e 's/,-,/,,/g; s/,-,/,,/g; s/,-$/,/' "$DAT" >"$OUT/scaling.csv"
echo "scaling: results -> $DAT, $OUT/scaling.csv"

# from the results when reused (or live): the card, the sizes, the frames
any=$(ls "$OUT"/grid_*.json "$OUT"/city_*.json 2>/dev/null | head -1)
if [ -n "$any" ]; then a=$(basename "$any" .json)
    GPU=$(jstr "$a" gpu); DRIVER=$(jstr "$a" driver); CPU=$(jstr "$a" cpu); THREADS=$(js "$a" host_threads)
    SIZE="$(js "$a" width)x$(js "$a" height)"; WARMUP=$(js "$a" warmup); FRAMES=$(js "$a" frames_measured)
fi
[ -f "$OUT/gpu-info.txt" ] && GPUINFO=$(cat "$OUT/gpu-info.txt")
ELAPSED=$(cat "$OUT/elapsed.txt" 2>/dev/null | sed 's/.*took //')
if [ $MODE = gpu ]; then LABEL=$GPU; else LABEL="CPU path, no GPU"; fi

# ---- plots ---------------------------------------------------------------------
PLOTS=""
if command -v gnuplot >/dev/null 2>&1; then
    P="$OUT/plot"; mkdir -p "$P" && rm -f "$P"/bench_scaling_*.png "$P"/*.dat
    # one file per family and structure, sorted by triangles
    awk -v dir="$P" '!/^#/ && $4 != "-" { f = dir "/" $1 "_" $3 ".dat"; print $4, $5, $6, $7, $9, $10, $11 | "sort -g > \"" f "\"" }' "$DAT"
    # curve FAMILY STRUCT COLUMN TITLE STYLE: a plot clause when the file has a
    # positive value in that column (a curve without one would stop gnuplot)
    curve() {
        local f="$P/$1_$2.dat"
        [ -f "$f" ] && awk -v c="$3" '$c != "-" && $c > 0 { ok = 1 } END { exit !ok }' "$f" &&
            printf '"%s" using 1:%d with linespoints %s title "%s", ' "$f" "$3" "$5" "$4"
    }
    # colours per quantity, dash type per family (grid solid, city dashed)
    build=""; refs=""; frame=""
    for fam in grid city; do
        [ $fam = grid ] && dt="dt 1 pt 7" || dt="dt 2 pt 6"
        for st in $STRUCTS; do
            case $st in kd) lc=1 ;; lbvh) lc=4 ;; bvh) lc=6 ;; *) lc=8 ;; esac
            build="$build$(curve $fam $st 2 "$st, $fam" "lw 2 lc $lc $dt")"
            if [ $st = kd ]; then
                build="$build$(curve $fam kd 3 "kd large stage, $fam" "lc 2 $dt")"
                build="$build$(curve $fam kd 4 "kd small stage, $fam" "lc 3 $dt")"
                refs="$refs$(curve $fam kd 5 "kd, $fam" "lw 2 lc 1 $dt")"
            fi
            frame="$frame$(curve $fam $st 7 "$st, $fam" "lw 2 lc $lc $dt")"
        done
        build="$build$(curve $fam hploc-peer 2 "peer H-PLOC BVH2, $fam" "lw 2 lc 7 $dt")"
        build="$build$(curve $fam hploc-peer+bvh8 2 "peer H-PLOC + BVH8, $fam" "lc 8 $dt")"
    done
    gp="$P/scaling.gp"
    # cairo draws the city's dashes; libgd's png (gnuplot-nox) draws them
    # solid, so the families differ by their points too (filled / open)
    term='png size 1200,640 font ",10"'
    gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 && term='pngcairo size 1200,640 font ",10"'
    {
        echo "set terminal $term"
        echo 'set grid; set key outside right top; set datafile missing "-"'
        echo 'set logscale x; set format x "10^{%L}"; set xlabel "triangles (log)"'
        if [ -n "$build" ]; then
            echo "set output \"$P/bench_scaling_build.png\"; set logscale y; set ylabel \"build ms (median, log)\""
            echo "set title \"build time vs triangles per stage, wavy grid (solid) and Sponza city (dashed), $LABEL\""
            echo "plot ${build%, }"
        fi
        if [ -n "$refs" ]; then
            echo "set output \"$P/bench_scaling_refs.png\"; unset logscale y; set yrange [0:*]; set ylabel \"references / triangle\""
            echo "set title \"kd-tree references per triangle vs triangles (the validated first frame), $LABEL\""
            echo "plot ${refs%, }"
            echo "set autoscale y"
        fi
        if [ -n "$frame" ]; then
            echo "set output \"$P/bench_scaling_frame.png\"; set logscale y; set ylabel \"frame ms: animate + build + trace (median, log)\""
            echo "set title \"frame time vs triangles per structure at $SIZE, grid (solid) and city (dashed), $LABEL\""
            echo "plot ${frame%, }"
        fi
    } >"$gp"
    if gnuplot "$gp" 2>"$P/gnuplot.log"; then
        grep -v "^$" "$P/gnuplot.log" | grep -iv warning | head -3
    else
        echo "scaling: gnuplot failed: $(tail -3 "$P/gnuplot.log")"
    fi
    for p in build refs frame; do [ -f "$P/bench_scaling_$p.png" ] && PLOTS="$PLOTS $p" && echo "scaling: plot $P/bench_scaling_$p.png"; done
else
    echo "scaling: gnuplot not installed (tests/deps.sh gnuplot-nox): plots skipped"
fi

# ---- table ---------------------------------------------------------------------
# row FAMILY SIZE STRUCT COLUMN: a value of scaling.dat
row() { awk -v f="$1" -v p="$2" -v s="$3" -v c="$4" '$1 == f && $2 == p && $3 == s { v = $c } END { print v == "" ? "-" : v }' "$DAT"; }
sname() { [ $1 = grid ] && echo "wavy grid $2" || echo "city $2"; }
T="$OUT/scaling.md"
has_peer=$(awk '$3 == "hploc-peer" { print 1; exit }' "$DAT")
if [ $MODE = gpu ]; then
    WHERE="GPU: **$GPU**${DRIVER:+, driver $DRIVER}${GPUINFO:+ (\`rtviewer --gpu-info\`: $GPUINFO)}"
else
    WHERE="**CPU path** ($CPU; no GPU: wall-clock times of the CPU builders and renderer at a tiny size, to check the script, not GPU numbers)"
fi
{
echo "Generated by \`tests/bench/scaling.sh\` ($(date -u +%Y-%m-%d)); $WHERE."
echo "\`rtviewer --bench SCENE --structure S --size $SIZE --warmup $WARMUP --frames $FRAMES\`, medians in ms."
echo "Wavy grid: a \`.scene\` of one line, \`wavegrid N\` (one deforming grid, \`rt_scene_make_wave\`); city: \`tests/bench/make_city.sh K\`, K copies"
echo "of Crytek Sponza turned each its own way and ceil(K/4) orbiting bunnies, a quarter of the Sponzas moving"
echo "(\`scenes/city.scene\`'s recipe). Every frame moves part of the scene, so each is a full rebuild. References"
echo "per triangle: the validated first frame's tree. Every run validates its first tree on the host before it"
echo "times anything (not part of any column; the validation column, in seconds, on ${THREADS:-?} host threads)."
[ -n "$has_peer" ] && echo "Peer: NexusBVH's H-PLOC (\`.peers/nexus\`, \`$PEER_ARGS\`) on \`bench_gpu_kd\`'s wavy grid of the same N (a height field like \`wavegrid\`'s, not the same surface), BVH2 ready (bounds, Morton codes, sort, H-PLOC) and with its 8-wide conversion, buffers allocated once, median."
[ -n "$ELAPSED" ] && echo "The sweep took $ELAPSED."
echo
echo "| scene | triangles | $(for st in $STRUCTS; do [ $st = kd ] && printf 'kd build | kd large | kd small | kd refs / tri | ' || printf '%s build | ' $st; done | sed 's/ $//')$([ -n "$has_peer" ] && printf ' peer H-PLOC BVH2 | peer + BVH8 |')"
echo "|---|---|$(for st in $STRUCTS; do [ $st = kd ] && printf '%s' '---|---|---|---|' || printf '%s' '---|'; done)$([ -n "$has_peer" ] && printf '%s' '---|---|')"
for fam in grid city; do
    [ $fam = grid ] && list=$SIZES || list=$CITIES
    for p in $list; do
        tris=-; for st in $STRUCTS hploc-peer; do [ "$tris" = - ] && tris=$(row $fam $p $st 4); done
        line="| $(sname $fam $p) | $tris |"
        for st in $STRUCTS; do
            line="$line $(fmt $(row $fam $p $st 5)) |"
            [ $st = kd ] && line="$line $(fmt $(row $fam $p kd 6)) | $(fmt $(row $fam $p kd 7)) | $(fmt $(row $fam $p kd 9)) |"
        done
        [ -n "$has_peer" ] && line="$line $([ $fam = grid ] && fmt $(row grid $p hploc-peer 5) || echo -) | $([ $fam = grid ] && fmt $(row grid $p hploc-peer+bvh8 5) || echo -) |"
        echo "$line"
    done
done
echo
echo "| scene | triangles | $(for st in $STRUCTS; do printf '%s trace | ' $st; done)$(for st in $STRUCTS; do printf '%s frame | ' $st; done)peak GPU MiB ($(echo $STRUCTS | sed 's| | / |g')) | host validation s ($(echo $STRUCTS | sed 's| | / |g')) |"
echo "|---|---|$(for st in $STRUCTS; do printf '%s' '---|---|'; done)---|---|"
for fam in grid city; do
    [ $fam = grid ] && list=$SIZES || list=$CITIES
    for p in $list; do
        tris=-; for st in $STRUCTS hploc-peer; do [ "$tris" = - ] && tris=$(row $fam $p $st 4); done
        line="| $(sname $fam $p) | $tris |"
        for st in $STRUCTS; do line="$line $(fmt $(row $fam $p $st 10)) |"; done
        for st in $STRUCTS; do line="$line $(fmt $(row $fam $p $st 11)) |"; done
        mem=""; val=""
        for st in $STRUCTS; do
            mem="$mem / $(fmt $(row $fam $p $st 12) 0)"
            v=$(row $fam $p $st 13); [ "$v" = - ] || v=$(awk -v v="$v" 'BEGIN { printf "%.1f", v / 1000 }')
            val="$val / $v"
        done
        echo "$line ${mem# / } | ${val# / } |"
    done
done
echo
for p in $PLOTS; do echo "![scaling $p](img/bench_scaling_$p.png)"; done
if [ -n "$REFUSED" ]; then
    echo
    echo "Refused by the \`.scene\` loader (\`wavegrid\` takes at most 10,485,760 triangles, \`SCENE_WAVE_MAX\` in \`src/scene/load_scenefile.c\`):$REFUSED."
fi
[ -n "$FAILED" ] && echo && echo "Runs that failed (see \`$OUT/*.log\`):$FAILED"
} >"$T"
echo "scaling: table -> $T"

# ---- docs ----------------------------------------------------------------------
if [ "${BENCH_DOCS:-1}" != 0 ]; then
    mkdir -p "$IMG"
    for p in $PLOTS; do cp "$OUT/plot/bench_scaling_$p.png" "$IMG"/; done
    grep -q "<!-- scaling:begin -->" "$DOC" || printf '\n<!-- scaling:begin -->\n<!-- scaling:end -->\n' >>"$DOC"
    awk -v gen="$T" '/<!-- scaling:begin -->/ { print; while ((getline l < gen) > 0) print l; skip = 1; next }
                     /<!-- scaling:end -->/ { skip = 0 } !skip' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
    echo "scaling: table spliced into $DOC, plots in $IMG/"
fi
[ -z "$FAILED" ] || { echo "scaling: failed runs:$FAILED"; exit 1; }
