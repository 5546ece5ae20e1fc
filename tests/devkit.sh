#!/bin/sh
# The kit the GPU machine needs (docs/benchmarks.md, "On the GPU machine"):
# ../shared/device/fetch-debs.sh's GLFW, GLEW and stb (with --display also
# Xvfb and xdotool for the window), plus what the project links that that
# kit lacks: cmocka (the tests), cJSON and assimp with assimp's own
# libraries (the loaders), and pkg-config (the Makefile finds assimp and
# cJSON with it). Debian 12's package names; all go to .devkit/debs
# (git-ignored), which .devkit/setup.sh unpacks on the GPU machine.
# Usage, from the project's root:  sh tests/devkit.sh [--display]
set -e
[ -d .git ] || { echo "devkit: run this from the project's root" >&2; exit 1; }
fetch=../shared/device/fetch-debs.sh
[ -x "$fetch" ] || { echo "devkit: $fetch is absent: the GPU machine's kit comes from there" >&2; exit 1; }
"$fetch" "$@"
cd .devkit/debs
apt-get -q download libcmocka0 libcmocka-dev libcjson1 libcjson-dev libassimp5 libassimp-dev libdraco7 \
    libminizip1 pkgconf pkgconf-bin libpkgconf3 pkg-config 2>&1 |
    grep -v -e "^Get:" -e "unsandboxed" -e "^Fetched" || true
for p in libcmocka-dev libcjson-dev libassimp-dev pkgconf; do
    ls ${p}_*.deb >/dev/null 2>&1 || { echo "devkit: $p was not downloaded" >&2; exit 1; }
done
echo "devkit: $(ls | wc -l) packages, $(du -sh . | cut -f1) in .devkit/debs"
