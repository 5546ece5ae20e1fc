# results.sh — reading a benchmark run's results, sourced by run.sh and
# scaling.sh (both set OUT, the folder of the runs' NAME.csv and NAME.json files).

# med NAME COLUMN: the median of a column of NAME's CSV (the upper one, as the
# benchmark prints), "-" when absent or empty (e.g. launches on the CPU path,
# build_large_ms of a BVH)
med() {
    [ -f "$OUT/$1.csv" ] || { echo "-"; return; }
    awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) k = i; next }
                         k && $k != "" { print $k }' "$OUT/$1.csv" |
        sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int(NR / 2) + 1]; else print "-" }'
}

# js NAME KEY: a top-level scalar of NAME's JSON (one key per line there),
# "-" when absent or null
js() {
    [ -f "$OUT/$1.json" ] || { echo "-"; return; }
    local v=$(sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$OUT/$1.json" | head -1)
    case $v in "" | null) echo "-" ;; *) echo "$v" ;; esac
}
# jo NAME OBJECT KEY: a field of a one-line object of NAME's JSON ("tree": the
# validated first frame's; "validation"), "-" when absent or null
jo() {
    [ -f "$OUT/$1.json" ] || { echo "-"; return; }
    local v=$(sed -n "s/^  \"$2\": {.*\"$3\": \([^,}]*\).*/\1/p" "$OUT/$1.json" | head -1)
    case $v in "" | null) echo "-" ;; *) echo "$v" ;; esac
}
# fmt X [DIGITS]: DIGITS decimals (2), "-" stays
fmt() { case $1 in - | "") echo "-" ;; *) printf "%.${2:-2}f" "$1" ;; esac; }
