#!/bin/bash
# sass.sh — the SASS (machine code) of one kernel, read on a machine without
# a GPU or CUDA's disassemblers: the project's nvcc (CUDA 13) has no
# nvdisasm here, so this uses Debian trixie's CUDA 12.4 nvdisasm, which
# reads CUDA 13's sm_90 cubins as they are and knows Hopper's newer opcodes
# (bookworm's 11.8 one needed the cubin's ELF header rewritten to the old
# encoding, silently dropped VIADD and VIMNMX, and left out desc[URx]
# memory operands).
#
#   tests/bench/sass.sh FILE.cu KERNEL_REGEX [OUT]
#   e.g. tests/bench/sass.sh cuda/trace/trace.cu 'cast_kernelI6KdWalkILi2ELi0ELb0EE'
#
# KERNEL_REGEX matches the mangled name (the .text section's); OUT (default
# build/sass/KERNEL.sass) gets the function's SASS, and the script prints
# how many instructions it holds. Should the disassembler skip any (the
# addresses jump), it says how many are missing. The first run fetches
# Debian trixie's nvidia-cuda-toolkit package (87 MB, the non-free
# component, through a temporary apt source kept in a temporary folder, as
# are its package lists) and keeps only its nvdisasm (51 MB, needing only
# libc) in build/tools/; an older nvdisasm there is replaced.
set -euo pipefail
[ $# -ge 2 ] || { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 1; }
src=$1 re=$2
[ -f Makefile ] && [ -f "$src" ] || { echo "sass: run from the project's root; $src not found" >&2; exit 1; }
dis=build/tools/nvdisasm
if ! { [ -x "$dis" ] && "$dis" --version 2>/dev/null | grep -q 'release 1[2-9]\.'; }; then
    echo "sass: fetching Debian trixie's nvidia-cuda-toolkit for its nvdisasm (once)" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp" && mkdir -m 777 "$tmp/deb" && mkdir -p "$tmp/lists/partial" "$tmp/cache"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$tmp/trixie.sources"
    apt=(-o Dir::Etc::sourcelist="$tmp/trixie.sources" -o Dir::Etc::sourceparts=-
         -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache")
    apt-get update -qq "${apt[@]}" >/dev/null
    (cd "$tmp/deb" && apt-get download -qq "${apt[@]}" nvidia-cuda-toolkit)
    dpkg-deb -x "$tmp"/deb/nvidia-cuda-toolkit_*.deb "$tmp/x"
    mkdir -p build/tools && cp "$tmp/x/usr/bin/nvdisasm" "$dis.new" && mv "$dis.new" "$dis"
fi
name=$(echo "$re" | tr -c 'A-Za-z0-9_\n' '_')
out=${3:-build/sass/$name.sass}
mkdir -p "$(dirname "$out")" build/sass
cubin=build/sass/$(basename "$src" .cu).cubin
"${NVCC:-/usr/local/cuda/bin/nvcc}" -std=c++17 -O2 -Isrc -Icuda -DRT_DEBUG=0 -arch=sm_90 -cubin -o "$cubin" "$src"
"$dis" -c "$cubin" | awk -v re="$re" '
    /^[[:space:]]*\/\/-+ \.text\./ { f = ($0 ~ re) }
    f' > "$out"
[ -s "$out" ] || { echo "sass: no kernel matching '$re' in $src" >&2; exit 1; }
# Instructions are 16 bytes apart from 0 in each function: count those
# printed, and the slots where the addresses skip.
counts=$(awk '
    function hex(s,  i, v) { for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
    /^[[:space:]]*\/\/-+ \.text\./ { prev = -16 }
    match($0, /^[[:space:]]*\/\*[0-9a-f]+\*\//) {
        s = substr($0, RSTART, RLENGTH); gsub(/[^0-9a-f]/, "", s)
        a = hex(s); n++; if (a > prev + 16) missing += (a - prev) / 16 - 1; prev = a
    }
    END { print n + 0, missing + 0 }' "$out")
read -r n missing <<< "$counts"
echo "sass: $out ($n instructions)"
[ "$missing" -eq 0 ] || echo "sass: warning: $missing instruction slots are missing from $out (its addresses skip them): $dis did not know their opcodes" >&2
