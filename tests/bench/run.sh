#!/bin/bash
# make bench: rtviewer --bench over the matrix (scenes x build variants x
# trace variants), JSON + CSV per run under $BENCH_OUT, then markdown tables
# and gnuplot PNGs, spliced into docs/benchmarks.md between the
# <!-- bench:begin --> and <!-- bench:end --> markers (the rest of the file
# is never touched) and written to docs/img/.
#
# With a usable GPU (./rtviewer --gpu-info) the numbers are GPU numbers at
# 1280x720; without one the CPU path runs at a small size with few frames,
# and every table says so. Knobs (environment):
#   RTVIEWER=./rtviewer  BENCH_OUT=build/bench  RT_TEST_EXT=build/ext (scenes)
#   BENCH_FRAMES / BENCH_WARMUP / BENCH_SIZE   override the per-mode defaults
#   BENCH_RUNNERS="0 1 2 4 8"                  runner counts (build time vs triangles)
#   BENCH_DOCS=0                               leave docs/ alone (tables stay in $BENCH_OUT)
#   BENCH_QUICK=1                              scenes, ladder and variants on one scene only
#   BENCH_BIG=0                                leave out the 10M grid and the 12M city (GPU)
#   BENCH_REUSE=1                              no runs: tables and plots from $BENCH_OUT's results
#   BENCH_DOC / BENCH_IMG                      where the tables / plots go (docs/benchmarks.md, docs/img)
# Without a GPU it runs the CPU path (the --build/--trace variants are GPU
# kernels: skipped). Runs one after another; the GPU matrix takes minutes
# (each run validates its first tree on the host: seconds for Sponza).
set -o pipefail
RTVIEWER=${RTVIEWER:-./rtviewer}
OUT=${BENCH_OUT:-build/bench}
EXT=${RT_TEST_EXT:-build/ext}
DOC=${BENCH_DOC:-docs/benchmarks.md}
IMG=${BENCH_IMG:-docs/img}
mkdir -p "$OUT"
# BENCH_REUSE=1: no runs, tables and plots from the JSON/CSV already in
# $BENCH_OUT (e.g. copied from a GPU machine without gnuplot)
if [ -n "$BENCH_REUSE" ]; then
    grep -qs '"backend": "gpu"' "$OUT"/scene_default.json && gpuline="(results in $OUT)"
elif [ ! -x "$RTVIEWER" ]; then
    echo "bench: $RTVIEWER not built (make first)"; exit 1
else
    gpuline=$("$RTVIEWER" --gpu-info 2>/dev/null) || gpuline=""
fi

# ---- mode: GPU numbers only on a GPU -----------------------------------------
if [ -n "$gpuline" ]; then
    MODE=gpu
    FRAMES=${BENCH_FRAMES:-20}; WARMUP=${BENCH_WARMUP:-3}; SIZE=${BENCH_SIZE:-1280x720}
    RUNNERS=${BENCH_RUNNERS:-"0 1 2 4 8 16"}
    PATHFLAG=""
    echo "bench: GPU path on $gpuline"
else
    MODE=cpu
    FRAMES=${BENCH_FRAMES:-3}; WARMUP=${BENCH_WARMUP:-1}; SIZE=${BENCH_SIZE:-320x180}
    RUNNERS=${BENCH_RUNNERS:-"0 1 2"}
    PATHFLAG="--cpu"
    echo "bench: NO usable GPU here: the CPU path at $SIZE with $FRAMES frames (+$WARMUP warm-up);"
    echo "bench: these are CPU wall-clock numbers, not GPU numbers"
fi

# ---- scenes --------------------------------------------------------------------
# ../shared/assets unpacked as tests/run.sh does (once, into build/ext)
ASSETS=${RT_ASSETS:-../shared/assets}
if [ -z "$RT_TEST_EXT" ] && [ -d "$ASSETS" ]; then
    for a in "$ASSETS"/*.tar.xz; do
        stamp="$EXT/.$(basename "$a" .tar.xz).unpacked"
        [ -f "$stamp" ] || { mkdir -p "$EXT" && tar xJf "$a" -C "$EXT" && touch "$stamp"; }
    done
fi
SCENES="default"
SPONZA="$EXT/sponza/sponza.obj"
KITCHEN="$EXT/bart/kitchen/aff/kitchen.aff"
[ -f "$SPONZA" ] && SCENES="$SCENES $SPONZA" || echo "bench: $SPONZA absent: Sponza skipped"
[ -f "$KITCHEN" ] && SCENES="$SCENES $KITCHEN" || echo "bench: $KITCHEN absent: BART kitchen skipped"
# the ladder and the variants run on the largest static scene there is
MAIN=default; [ -f "$SPONZA" ] && MAIN=$SPONZA
# frame time over an animation: the kitchen's camera path, else the default
# scene with runners (so that something moves whatever the default scene is)
ANIM=default; ANIM_ARGS="--runners 2"; [ -f "$KITCHEN" ] && ANIM=$KITCHEN && ANIM_ARGS=""
[ -n "$BENCH_QUICK" ] && SCENES=$MAIN
# the scenes at scale, GPU only (minutes per frame on the CPU path): the
# 10M-triangle grid and, with Sponza and the bunny, the 12M-triangle city
if [ $MODE = gpu ] && [ -z "$BENCH_QUICK" ] && [ "${BENCH_BIG:-1}" != 0 ]; then
    SCENES="$SCENES scenes/grid10m.scene"
    [ -f "$SPONZA" ] && [ -f "$EXT/models/bunny.obj" ] && [ "$EXT" = build/ext ] && SCENES="$SCENES scenes/city.scene"
fi

FAILED=""
# bench NAME SCENE [rtviewer options...]: one run -> $OUT/NAME.{json,csv,log}
bench() {
    local name=$1 scene=$2; shift 2
    if [ -n "$BENCH_REUSE" ]; then
        [ -f "$OUT/$name.json" ] || FAILED="$FAILED $name"
        return 0
    fi
    echo "bench: $name: $RTVIEWER --bench $scene $* --size $SIZE --frames $FRAMES --warmup $WARMUP $PATHFLAG"
    if ! "$RTVIEWER" --bench "$scene" "$@" --size "$SIZE" --frames "$FRAMES" --warmup "$WARMUP" $PATHFLAG \
        --json "$OUT/$name.json" --csv "$OUT/$name.csv" >"$OUT/$name.log" 2>&1; then
        echo "bench: $name FAILED:"; tail -5 "$OUT/$name.log"
        FAILED="$FAILED $name"
        rm -f "$OUT/$name.json" "$OUT/$name.csv"
        return 1
    fi
    grep -E "^median" "$OUT/$name.log"
}

# med, js, jo, fmt (results.sh)
. "$(dirname "$0")/results.sh"
sname() { case $1 in default) echo default ;; *) basename "$1" | sed 's/\.[^.]*$//' ;; esac; }

# ---- the matrix ----------------------------------------------------------------
for s in $SCENES; do bench "scene_$(sname "$s")" "$s"; done
for n in $RUNNERS; do bench "runners_$n" "$MAIN" --runners "$n"; done
# the other structures of the slot (kd is the scene_* and runners_* runs)
STRUCTS="lbvh bvh"
for st in $STRUCTS; do
    for s in $SCENES; do bench "struct_${st}_$(sname "$s")" "$s" --structure "$st"; done
done
CONSTRUCT="inclusion:box=inclusion clipping:box=clipping ssah:small=ssah nolower:small=none levels:fused=0"
TRACES="restart:traversal=restart shortstack:traversal=shortstack rows:map=rows noskip:skip=0 packets:packet=warp"
# --build and --trace select GPU variants: the CPU path has none to compare
if [ $MODE = gpu ]; then
    for k in 0 1 2 3 4 5; do bench "ladder_$k" "$MAIN" --build "ladder=$k"; done
    for v in $CONSTRUCT; do bench "build_${v%%:*}" "$MAIN" --build "${v#*:}"; done
    for v in $TRACES; do bench "trace_${v%%:*}" "$MAIN" --trace "${v#*:}"; done
else
    echo "bench: Chang's ladder, construction and trace variants are GPU variants: skipped on the CPU path"
fi
if [ $MODE = gpu ]; then ANIM_FRAMES=120; else ANIM_FRAMES=8; fi
FRAMES=$ANIM_FRAMES bench anim "$ANIM" $ANIM_ARGS --stats

# ---- tables --------------------------------------------------------------------
T="$OUT/tables.md"
any=$(ls "$OUT"/scene_*.json 2>/dev/null | head -1)
GPU=$( [ -n "$any" ] && sed -n 's/^  "gpu": "\(.*\)",$/\1/p' "$any" | head -1)
DRIVER=$( [ -n "$any" ] && sed -n 's/^  "driver": "\(.*\)",$/\1/p' "$any" | head -1)
CPU=$( [ -n "$any" ] && sed -n 's/^  "cpu": "\(.*\)",$/\1/p' "$any" | head -1)
if [ -n "$any" ]; then
    SIZE="$(js "$(basename "$any" .json)" width)x$(js "$(basename "$any" .json)" height)"
    WARMUP=$(js "$(basename "$any" .json)" warmup); FRAMES=$(js "$(basename "$any" .json)" frames_measured)
    [ -f "$OUT/anim.json" ] && ANIM_FRAMES=$(js anim frames_measured)
fi
if [ $MODE = gpu ]; then WHERE="GPU: **$GPU**, driver $DRIVER"; else WHERE="**CPU path** ($CPU; no GPU on the machine that ran it: wall-clock times of the CPU reference builder and renderer, not GPU numbers)"; fi
{
echo "## Headless benchmark (\`make bench\`, generated $(date -u +%Y-%m-%d))"
echo
echo "$WHERE. \`rtviewer --bench\` at $SIZE, $WARMUP warm-up + $FRAMES measured frames per run"
echo "(the animation run: $ANIM_FRAMES), medians per column in ms. Every run validates the first"
echo "frame's tree before it times anything. Trace per ray type: three extra passes over"
echo "the frame's tree (primary only; + shadow rays; everything), each run twice, the faster"
echo "kept; shadow = pass 2 - pass 1, reflection = pass 3 - pass 2 (secondary rays and their"
echo "shading), 0 when below the timer's noise. Diffuse: one cosine-weighted ray per primary hit"
echo "(fixed seed), cast alone through the same tree, closest hit, no shading (run twice, the faster"
echo "kept); not part of the frame. Mrays/s: the frame's rays over its trace; diffuse Mrays/s: the"
echo "diffuse rays over their cast. Depth and SAH cost: the validated first frame's"
echo "tree. Raw JSON/CSV: \`$OUT/\`;"
echo "regenerate with \`make bench\` (knobs at the top of \`tests/bench/run.sh\`)."
echo
echo "### Scenes (default build and trace parameters)"
echo
echo "| scene | triangles | animate | build | primary | shadow | reflection | diffuse | frame | Mrays/s | diffuse Mrays/s | nodes | depth | SAH | peak GPU MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for s in $SCENES; do n=scene_$(sname "$s")
    echo "| $(sname "$s") | $(js $n triangles) | $(fmt $(med $n animate_ms)) | $(fmt $(med $n build_ms)) | $(fmt $(med $n trace_primary_ms)) | $(fmt $(med $n trace_shadow_ms)) | $(fmt $(med $n trace_reflection_ms)) | $(fmt $(med $n trace_diffuse_ms)) | $(fmt $(med $n frame_ms)) | $(fmt $(med $n mrays_per_s)) | $(fmt $(med $n diffuse_mrays_per_s)) | $(med $n nodes) | $(jo $n tree depth) | $(fmt $(jo $n tree sah_cost)) | $(js $n peak_gpu_mem_mb) |"
done
echo
echo "### Structures per scene (default parameters)"
echo
echo "Per frame: build + trace (primary, shadow, reflection: the frame) + the diffuse cast, medians;"
echo "the shortest per scene in bold. kd: the Zhou/Chang kd-tree (GPU) or the SAH kd-tree (CPU path);"
echo "lbvh: Karras's LBVH with SAH leaf collapse; bvh: H-PLOC (Benthin et al. 2024) over the same"
echo "Morton order, same collapse; both traced with the BVH loop (same shading)."
echo
echo "| scene | structure | build | primary | shadow | reflection | diffuse | build + trace + diffuse | nodes | SAH |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for s in $SCENES; do
    rows=""; best=""; bestv=""
    for st in kd $STRUCTS; do
        n=scene_$(sname "$s"); [ $st = kd ] || n=struct_${st}_$(sname "$s")
        tot=$(awk -v b="$(med $n build_ms)" -v t="$(med $n trace_ms)" -v d="$(med $n trace_diffuse_ms)" \
            'BEGIN { if (b == "-" || t == "-") print "-"; else printf "%.2f", b + t + (d == "-" ? 0 : d) }')
        if [ "$tot" != "-" ] && { [ -z "$bestv" ] || awk -v a="$tot" -v b="$bestv" 'BEGIN { exit !(a < b) }'; }; then
            best=$st; bestv=$tot
        fi
        rows="$rows$st $n $tot
"
    done
    while read -r st n tot; do
        [ -n "$st" ] || continue
        [ "$st" = "$best" ] && tot="**$tot**"
        echo "| $(sname "$s") | $st | $(fmt $(med $n build_ms)) | $(fmt $(med $n trace_primary_ms)) | $(fmt $(med $n trace_shadow_ms)) | $(fmt $(med $n trace_reflection_ms)) | $(fmt $(med $n trace_diffuse_ms)) | $tot | $(med $n nodes) | $(fmt $(jo $n tree sah_cost)) |"
    done <<<"$rows"
done
echo
echo "### Build time vs triangle count ($(sname "$MAIN") + N runners)"
echo
echo "| runners | triangles | build | large | small | launches | round trips | frame |"
echo "|---|---|---|---|---|---|---|---|"
for r in $RUNNERS; do n=runners_$r
    echo "| $r | $(js $n triangles) | $(fmt $(med $n build_ms)) | $(fmt $(med $n build_large_ms)) | $(fmt $(med $n build_small_ms)) | $(med $n launches) | $(med $n round_trips) | $(fmt $(med $n frame_ms)) |"
done
names=("Original" "[A]" "[A]-[B]" "[A]-[C]" "[A]-[D]" "All")
if [ $MODE = gpu ]; then
echo
echo "### Chang et al.'s ladder ($(sname "$MAIN"))"
echo
echo "| row | variant | build | large | small | launches | round trips | SAH |"
echo "|---|---|---|---|---|---|---|---|"
for k in 0 1 2 3 4 5; do n=ladder_$k
    echo "| $k | ${names[$k]} | $(fmt $(med $n build_ms)) | $(fmt $(med $n build_large_ms)) | $(fmt $(med $n build_small_ms)) | $(med $n launches) | $(med $n round_trips) | $(fmt $(jo $n tree sah_cost)) |"
done
echo
echo "### Build + trace per frame by construction variant ($(sname "$MAIN"); Hoedt's total rendering time)"
echo
echo "| variant | --build | build | trace | build + trace | nodes | references | SAH |"
echo "|---|---|---|---|---|---|---|---|"
for v in $CONSTRUCT; do n=build_${v%%:*}
    b=$(med $n build_ms); t=$(med $n trace_ms)
    bt=$(awk -v b="$b" -v t="$t" 'BEGIN { if (b == "-" || t == "-") print "-"; else printf "%.2f", b + t }')
    echo "| ${v%%:*} | \`${v#*:}\` | $(fmt $b) | $(fmt $t) | $bt | $(med $n nodes) | $(med $n references) | $(fmt $(jo $n tree sah_cost)) |"
done
echo
echo "### Trace variants ($(sname "$MAIN"), default build)"
echo
echo "| variant | --trace | trace | primary | shadow | reflection | diffuse | Mrays/s | diffuse Mrays/s |"
echo "|---|---|---|---|---|---|---|---|---|"
for v in $TRACES; do n=trace_${v%%:*}
    echo "| ${v%%:*} | \`${v#*:}\` | $(fmt $(med $n trace_ms)) | $(fmt $(med $n trace_primary_ms)) | $(fmt $(med $n trace_shadow_ms)) | $(fmt $(med $n trace_reflection_ms)) | $(fmt $(med $n trace_diffuse_ms)) | $(fmt $(med $n mrays_per_s)) | $(fmt $(med $n diffuse_mrays_per_s)) |"
done
else
echo
echo "Chang's ladder, the construction variants and the trace variants select GPU kernels: not run on the CPU path."
fi
echo
echo "### Frame time over an animation ($(sname "$ANIM") $ANIM_ARGS, $ANIM_FRAMES frames)"
echo
echo "| | animate | build | trace | frame |"
echo "|---|---|---|---|---|"
echo "| median | $(fmt $(med anim animate_ms)) | $(fmt $(med anim build_ms)) | $(fmt $(med anim trace_ms)) | $(fmt $(med anim frame_ms)) |"
echo
PLOTS="build_vs_triangles structures frame_time"; [ $MODE = gpu ] && PLOTS="build_vs_triangles structures ladder build_trace frame_time"
for p in $PLOTS; do
    echo "![$p](img/bench_$p.png)"
done
[ -n "$FAILED" ] && echo && echo "Runs that failed (see \`$OUT/*.log\`):$FAILED"
} >"$T"
echo "bench: tables -> $T"

# ---- plots ---------------------------------------------------------------------
if command -v gnuplot >/dev/null 2>&1; then
    mkdir -p "$OUT/plot" && rm -f "$OUT"/plot/bench_*.png
    for r in $RUNNERS; do echo "$(js runners_$r triangles) $(med runners_$r build_ms) $(med runners_$r build_large_ms) $(med runners_$r build_small_ms)"; done |
        awk '$1 != "-" && $2 != "-"' >"$OUT/plot/tris.dat"
    # build + trace + diffuse per frame vs the scene's triangles: one
    # column per structure, one row per scene (the structures table's totals)
    for sc in $SCENES; do
        line="$(js scene_$(sname "$sc") triangles)"
        for st in kd $STRUCTS; do
            n=scene_$(sname "$sc"); [ $st = kd ] || n=struct_${st}_$(sname "$sc")
            line="$line $(awk -v b="$(med $n build_ms)" -v t="$(med $n trace_ms)" -v d="$(med $n trace_diffuse_ms)" \
                'BEGIN { if (b == "-" || t == "-") print "-"; else print b + t + (d == "-" ? 0 : d) }')"
        done
        echo "$line"
    done | awk '$1 != "-"' | sort -g >"$OUT/plot/structs.dat"
    for k in 0 1 2 3 4 5; do echo "$k \"${names[$k]}\" $(med ladder_$k build_large_ms) $(med ladder_$k build_small_ms) $(med ladder_$k build_ms)"; done >"$OUT/plot/ladder.dat"
    for v in $CONSTRUCT; do n=build_${v%%:*}; echo "\"${v%%:*}\" $(med $n build_ms) $(med $n trace_ms)"; done >"$OUT/plot/construct.dat"
    [ -f "$OUT/anim.csv" ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print $c["t"], $c["animate_ms"], $c["build_ms"], $c["trace_ms"], $c["frame_ms"] }' "$OUT/anim.csv" >"$OUT/plot/anim.dat"
    label=$( [ $MODE = gpu ] && echo "$GPU" || echo "CPU path, no GPU" )
    gp="$OUT/plot/bench.gp"
    cat >"$gp" <<EOF
set terminal png size 900,540 font ",11"
set grid; set key top left; set yrange [0:*]
set datafile missing "-"
set output "$OUT/plot/bench_build_vs_triangles.png"
set title "kd-tree build time vs triangles ($(sname "$MAIN") + runners), $label"
set xlabel "triangles"; set ylabel "ms (median)"
plot "$OUT/plot/tris.dat" using 1:2 with linespoints lw 2 title "build", \\
     "" using 1:3 with linespoints title "large-node stage", "" using 1:4 with linespoints title "small-node stage"
set output "$OUT/plot/bench_structures.png"
set title "build + trace + diffuse per frame vs triangles, per structure (the scenes of the table), $label"
set xlabel "triangles (log)"; set ylabel "ms (median, log)"; set logscale xy; set yrange [*:*]
plot "$OUT/plot/structs.dat" using 1:2 with linespoints lw 2 title "kd", $(k=3; for st in $STRUCTS; do printf '"" using 1:%d with linespoints lw 2 title "%s", ' $k $st; k=$((k + 1)); done | sed 's/, $//')
unset logscale; set yrange [0:*]
set output "$OUT/plot/bench_frame_time.png"
set title "frame time over the animation ($(sname "$ANIM") $ANIM_ARGS), $label"
set xlabel "animation time (s)"; set ylabel "ms"
plot "$OUT/plot/anim.dat" using 1:5 with linespoints lw 2 title "frame", "" using 1:3 with linespoints title "build", \\
     "" using 1:4 with linespoints title "trace", "" using 1:2 with linespoints title "animate"
EOF
    [ $MODE = gpu ] && cat >>"$gp" <<EOF
set output "$OUT/plot/bench_ladder.png"
set title "Chang et al.'s optimisation ladder ($(sname "$MAIN")), $label"
set style data histograms; set style histogram rowstacked; set style fill solid 0.8 border -1; set boxwidth 0.7; set key outside right
set xlabel ""; set ylabel "build ms (median)"
plot "$OUT/plot/ladder.dat" using 3:xtic(2) title "large", "" using 4 title "small"
set output "$OUT/plot/bench_build_trace.png"
set title "build + trace per frame by construction variant ($(sname "$MAIN")), $label"
set ylabel "ms per frame (median)"
plot "$OUT/plot/construct.dat" using 2:xtic(1) title "build", "" using 3 title "trace"
EOF
    # one triangle count (runners not in this build) is no curve
    if [ "$(cut -d' ' -f1 "$OUT/plot/tris.dat" | sort -u | wc -l)" -lt 2 ]; then
        echo "bench: --runners did not change the triangle count: no build-vs-triangles plot"
        sed -i '/bench_build_vs_triangles.png/,/small-node stage"$/d' "$gp"
        sed -i '/bench_build_vs_triangles/d' "$T"
    fi
    gnuplot "$gp" 2>"$OUT/plot/gnuplot.log" || echo "bench: gnuplot failed: $(tail -3 "$OUT/plot/gnuplot.log")"
    ls "$OUT"/plot/bench_*.png 2>/dev/null | sed 's/^/bench: plot /'
else
    echo "bench: gnuplot not installed (tests/deps.sh gnuplot-nox): plots skipped"
fi

# ---- docs ----------------------------------------------------------------------
if [ "${BENCH_DOCS:-1}" != 0 ]; then
    mkdir -p "$IMG"
    cp "$OUT"/plot/bench_*.png "$IMG"/ 2>/dev/null
    grep -q "<!-- bench:begin -->" "$DOC" || printf '\n<!-- bench:begin -->\n<!-- bench:end -->\n' >>"$DOC"
    awk -v gen="$T" '/<!-- bench:begin -->/ { print; while ((getline l < gen) > 0) print l; skip = 1; next }
                     /<!-- bench:end -->/ { skip = 0 } !skip' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
    echo "bench: tables spliced into $DOC, plots in $IMG/"
fi
[ -z "$FAILED" ] || { echo "bench: failed runs:$FAILED"; exit 1; }
