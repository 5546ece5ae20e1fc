# results.sh — reading a benchmark run's results, sourced by run.sh and
# scaling.sh (both set OUT, the folder of the runs' NAME.csv files).

# med NAME COLUMN: the median of a column of NAME's CSV (the upper one, as the
# benchmark prints), "-" when absent or empty (e.g. launches on the CPU path,
# build_large_ms of a BVH)
med() {
    [ -f "$OUT/$1.csv" ] || { echo "-"; return; }
    awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) k = i; next }
                         k && $k != "" { print $k }' "$OUT/$1.csv" |
        sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int(NR / 2) + 1]; else print "-" }'
}
