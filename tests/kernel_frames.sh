#!/bin/sh
# kernel_frames.sh — the BVH builders' kernels keep no stack frame.
#
# ptxas reports, per kernel, the local memory its threads keep (a "stack
# frame"). In these kernels a frame is never wanted: once the split top's
# reference buffers, indexed with a value known only at run time, put a
# 136-byte frame into H-PLOC's clustering kernel (the arrays copied to
# local memory in every thread), which slowed the build with every test
# green (docs/bvh.md, "No stack frames"). Timed tests cannot catch that on
# CI (no GPU); ptxas can, on any machine with nvcc.
#
# Compiles the BVH family's CUDA files with the build's nvcc and flags
# (RT_NVCC, RT_NVFLAGS: make test passes the Makefile's, so the check sees
# the code the build makes), adding ptxas's report, and fails on a kernel
# with a frame that is not listed below with its reason. Exit 77 (skipped)
# without nvcc, or when run other than through make test.
if [ -z "${RT_NVCC:-}" ] || ! [ -x "$RT_NVCC" ] || [ -z "${RT_NVFLAGS:-}" ]; then
    echo "skip: no nvcc, or no build flags (make test passes them): the kernels' frames are not checked"
    exit 77
fi
# Frames by design (the mangled name's kernel, and why):
#   top_count_kernel       a straddler's clipped polygons (kd_clip.h)
#   top_bin_kernel         the last block's decision (decide_level's choices)
allowed='top_count_kernel|top_bin_kernel'
out=$(mktemp)
trap 'rm -f "$out" "$out.res"' EXIT
fail=0 kernels=0
for f in cuda/bvh/hploc_gpu.cu cuda/bvh/bvh_gpu_common.cu cuda/bvh/lbvh_gpu.cu cuda/bvh/split_top_gpu.cu; do
    # shellcheck disable=SC2086 # RT_NVFLAGS is a list of words
    if ! "$RT_NVCC" $RT_NVFLAGS -Xptxas -v -c "$f" -o /dev/null >"$out" 2>&1; then
        cat "$out"
        echo "FAIL: $f does not compile"
        exit 1
    fi
    # "Function properties for NAME" then "N bytes stack frame, ..."
    report=$(awk '/Function properties for/ { name = $NF; next }
                  /bytes stack frame/ && name != "" { print name, $1; name = "" }' "$out")
    n=$(printf '%s\n' "$report" | grep -c .)
    kernels=$((kernels + n))
    printf '%s\n' "$report" | while read -r name bytes; do
        [ -n "$name" ] || continue
        if [ "$bytes" -gt 0 ] && ! printf '%s' "$name" | grep -Eq "$allowed"; then
            echo "FAIL: $f: $name keeps a $bytes-byte stack frame"
        elif [ "$bytes" -gt 0 ]; then
            echo "ok (by design): $f: $name: $bytes bytes"
        fi
    done >>"$out.res"
done
cat "$out.res"
grep -q '^FAIL' "$out.res" && fail=1
if [ "$kernels" -eq 0 ]; then
    echo "FAIL: ptxas reported no kernel (its report's format changed?)"
    exit 1
fi
echo "kernel_frames: $kernels functions checked"
exit $fail
