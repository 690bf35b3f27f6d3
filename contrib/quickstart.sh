#!/bin/sh
# Build runnel and start one node (broker and controller) on 127.0.0.1:9092
# with the embedded default configuration. Runs in the foreground; Ctrl-C
# stops it. Data goes to /tmp/runnel-logs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/contrib/deps.sh"
rn_ensure_packages "$top/contrib/debian-packages"

build="$top/build"
mkdir -p "$build"
cd "$top"
[ -x configure ] || autoreconf -fi
cd "$build"
[ -f Makefile ] || "$top/configure" --prefix="$build/install" >/dev/null
make -j"$(nproc)" >/dev/null

sock="$build/runneld.sock"
echo "runnel: starting a single node on 127.0.0.1:9092 (data in /tmp/runnel-logs)"
echo "runnel: in another terminal: $build/runnelctl -s $sock status"
echo "runnel:                      kcat -b 127.0.0.1:9092 -L"
exec "$build/runneld" --override "control.socket.path=$sock" "$@"
