#!/bin/bash
# sass.sh — the SASS (machine code) of one kernel, read on a machine without
# a GPU or CUDA's disassemblers: the project's nvcc (CUDA 13) has no
# nvdisasm here, and Debian's CUDA 11.8 nvdisasm reads CUDA 13's sm_90
# cubins once their ELF header carries the old encoding (OSABI 0x33, ABI
# version 7, flags 0x005a055a: sm_90, virtual sm_90, 64-bit, unified
# textures), which this script writes into a copy.
#
#   tests/bench/sass.sh FILE.cu KERNEL_REGEX [OUT]
#   e.g. tests/bench/sass.sh cuda/trace/trace.cu 'cast_kernelI6KdWalkILi2ELi0ELb0EE'
#
# KERNEL_REGEX matches the mangled name (the .text section's); OUT (default
# build/sass/KERNEL.sass) gets the function's SASS, and the script prints
# its length. The first run fetches Debian bookworm's nvidia-cuda-toolkit
# package (84 MB, the non-free component, through a temporary apt source)
# and keeps only its nvdisasm in build/tools/.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 1; }
src=$1 re=$2
[ -f Makefile ] && [ -f "$src" ] || { echo "sass: run from the project's root; $src not found" >&2; exit 1; }
dis=build/tools/nvdisasm
if [ ! -x "$dis" ]; then
    echo "sass: fetching Debian's nvidia-cuda-toolkit for its nvdisasm (once)" >&2
    list=/etc/apt/sources.list.d/zz-sass-nonfree.sources
    tmp=$(mktemp -d)
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$list"
    trap 'rm -f "$list"; rm -rf "$tmp"' EXIT
    apt-get update -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- >/dev/null
    (cd "$tmp" && apt-get download -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- nvidia-cuda-toolkit)
    dpkg-deb -x "$tmp"/nvidia-cuda-toolkit_*.deb "$tmp/x"
    mkdir -p build/tools && cp "$tmp/x/usr/bin/nvdisasm" "$dis"
fi
name=$(echo "$re" | tr -c 'A-Za-z0-9_\n' '_')
out=${3:-build/sass/$name.sass}
mkdir -p "$(dirname "$out")" build/sass
cubin=build/sass/$(basename "$src" .cu).cubin
"${NVCC:-/usr/local/cuda/bin/nvcc}" -std=c++17 -O2 -Isrc -Icuda -DRT_DEBUG=0 -arch=sm_90 -cubin -o "$cubin" "$src"
python3 - "$cubin" <<'PY'
import struct, sys
p = sys.argv[1]
d = bytearray(open(p, 'rb').read())
d[7], d[8] = 0x33, 7
struct.pack_into('<I', d, 0x30, 0x005a055a)
open(p, 'wb').write(d)
PY
"$dis" -c "$cubin" | awk -v re="$re" '
    /^[[:space:]]*\/\/-+ \.text\./ { f = ($0 ~ re) }
    f' > "$out"
[ -s "$out" ] || { echo "sass: no kernel matching '$re' in $src" >&2; exit 1; }
echo "sass: $out ($(grep -c '/\*[0-9a-f]\{4\}\*/' "$out") instructions)"
