#!/bin/sh
# Build runnel from this checkout and run the whole test suite (unit tests
# and integration tests against real runneld processes and real Kafka
# clients) twice: once as shipped, once built with AddressSanitizer and
# UndefinedBehaviorSanitizer, where any sanitizer report is a failure.
# After the first pass, make check-systemd in the same build: the
# installed unit under a real systemd (tests/systemd/check-systemd.py).
# Installs missing Debian packages when run as root, and fetches and builds
# librdkafka's own test suite (contrib/librdkafka-tests.sh). The last line is
# "N passed, N failed", counted from the TAP results of both passes.
#
#   tests/run-all.sh                   both passes
#   tests/run-all.sh --no-sanitizers   the plain pass only
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/contrib/deps.sh"
rn_ensure_packages "$top/contrib/debian-packages" || exit 1
# librdkafka's test suite: fetched and built here, before make check's
# per-test time limit starts (a failure here fails that test, later)
rn_ensure_librdkafka_tests "$top"
cd "$top" && autoreconf -fi || exit 1

total_passed=0
total_failed=0

# run_pass NAME BUILDDIR CONFIGURE-FLAGS...: builds and runs make check,
# adds its counts to the totals.
run_pass() {
	name=$1 build=$2
	shift 2
	rm -rf "$build"
	mkdir -p "$build"
	cd "$build" && "$top/configure" --enable-werror "$@" >/dev/null ||
		{ total_failed=$((total_failed + 1)); return; }
	make -j"$(nproc)" >/dev/null || { make; total_failed=$((total_failed + 1)); return; }
	make -j"$(nproc)" check
	rc=$?

	trs=$(find . -name '*.trs')
	passed=$(cat $trs 2>/dev/null | grep -c '^:test-result: \(PASS\|XFAIL\)')
	skipped=$(cat $trs 2>/dev/null | grep -c '^:test-result: SKIP')
	failed=$(cat $trs 2>/dev/null | grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\)')
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		failed=1 # the harness itself failed
	fi
	grep -H '^not ok' $(find tests -name '*.log') 2>/dev/null | head -100
	# and what each failing test said around its failures (its "# "
	# diagnostics) and at its end (a traceback), so a CI log that
	# shows only its tail can be read
	for bad in $(grep -l '^:test-result: \(FAIL\|XPASS\|ERROR\)' $trs 2>/dev/null); do
		log=${bad%.trs}.log
		echo "--- $log"
		{ grep -B8 -A12 '^not ok' "$log" | grep '^\(not ok\|# \)'
		  echo "(its last lines)"; grep -v '^%[0-9]|' "$log" | tail -15
		} | cut -c1-400 | head -60
	done
	[ "$skipped" -eq 0 ] || echo "($name: $skipped skipped)"
	echo "$name: $passed passed, $failed failed"
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
}

# run_systemd BUILDDIR: make check-systemd there (the installed unit under
# a real systemd, TAP on its output), its ok and not ok lines added to the
# totals like make check's results.
run_systemd() {
	build=$1
	log="$build/check-systemd.log"
	[ -f "$build/Makefile" ] || { total_failed=$((total_failed + 1)); return; }
	(cd "$build" && make check-systemd) >"$log" 2>&1
	rc=$?
	cat "$log"
	passed=$(grep -c '^ok ' "$log")
	failed=$(grep -c '^not ok ' "$log")
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		failed=1 # the target itself failed
	fi
	grep '^1\.\.0 # SKIP' "$log" | sed 's/^/(systemd: /; s/$/)/'
	echo "systemd: $passed passed, $failed failed"
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
}

run_pass plain "$top/build-check"
run_systemd "$top/build-check"

if [ "${1:-}" != "--no-sanitizers" ]; then
	# Reports go to files, so one in a worker that the supervisor
	# restarts is not lost in a node's log. A small quarantine keeps
	# the memory-bound tests meaningful; the fault tests preload their
	# own shims (libfaketime, the power cut) ahead of the ASan runtime;
	# leak checks are off because
	# the configuration and the image live as long as the process.
	reports="$top/build-san-reports"
	rm -rf "$reports"
	mkdir -p "$reports"
	ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0:quarantine_size_mb=4:malloc_context_size=8:log_path=$reports/asan"
	UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan"
	RUNNEL_SANITIZERS=1
	export ASAN_OPTIONS UBSAN_OPTIONS RUNNEL_SANITIZERS
	run_pass sanitizers "$top/build-san" --enable-sanitizers
	n=$(find "$reports" -type f | wc -l)
	if [ "$n" -gt 0 ]; then
		echo "sanitizers: $n report(s):"
		for f in "$reports"/*; do
			echo "--- $f"
			head -40 "$f"
		done
		total_failed=$((total_failed + n))
	fi
fi

echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
