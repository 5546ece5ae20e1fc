#!/bin/sh
# Installs the Debian packages named on the command line that are missing:
# as root with apt-get, else through sudo, else prints the command and fails.
[ -n "$RT_SKIP_DEPS" ] && exit 0   # e.g. a machine whose packages were unpacked by hand
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive $cmd
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "deps: installing$missing (sudo)"
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive $cmd
else
    echo "deps: missing Debian packages:$missing"
    echo "deps: run this, then try again:  sudo apt-get update && sudo $cmd"
    exit 1
fi
