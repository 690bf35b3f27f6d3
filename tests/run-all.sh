#!/bin/sh
# Build runnel from this checkout and run the whole test suite (unit tests
# and integration tests against real runneld processes and real Kafka
# clients). Installs missing Debian packages when run as root. The last
# line is "N passed, N failed", counted from the TAP results.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/contrib/deps.sh"
rn_ensure_packages "$top/contrib/debian-packages" || exit 1

build="$top/build-check"
rm -rf "$build"
mkdir -p "$build"
cd "$top" && autoreconf -fi || exit 1
cd "$build" && "$top/configure" --enable-werror >/dev/null || exit 1
make -j"$(nproc)" >/dev/null || { make; exit 1; }
make -j"$(nproc)" check
rc=$?

# one line per TAP result in the .log files the driver wrote
passed=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: \(PASS\|XFAIL\)')
skipped=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: SKIP')
failed=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\)')
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1 # the harness itself failed
fi
grep -H '^not ok' $(find tests -name '*.log') 2>/dev/null | head -100
[ "$skipped" -eq 0 ] || echo "($skipped skipped)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
