#!/bin/sh
# Build the fuzz targets with libFuzzer, ASan and UBSan and run each for a
# bounded time over a copy of its seed corpus: the request decoder
# (fuzz_request.c, corpus/) and the server.properties parser
# (fuzz_config.c, corpus-config/). Prints TAP: per target, the build, then
# "no crash in N runs".
#
#   RUNNEL_BUILDDIR=./build FUZZ_SECONDS=600 tests/fuzz/run-fuzz.sh
#
# The sources are compiled directly (not through librunnel.a): the target
# needs the sanitizer and coverage instrumentation in the codec itself.
# A crash leaves its input in $builddir/tests/fuzz/artifacts/ and the log
# says how to replay it. Missing clang or its fuzzer runtime is a failure,
# not a skip: CI must not go green without having fuzzed.
#
# Environment:
#   RUNNEL_SRCDIR    source tree (default: this script's ../..)
#   RUNNEL_BUILDDIR  configured build dir holding autoconf.h (./build)
#   FUZZ_SECONDS     how long to fuzz the request decoder (60); the config
#                    parser gets a third of it (at least 5)
#   FUZZ_CC          compiler (clang, else clang-14)
set -u

srcdir=${RUNNEL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${RUNNEL_BUILDDIR:-$srcdir/build}
secs=${FUZZ_SECONDS:-60}
out=$builddir/tests/fuzz
pkgs="clang-14 libclang-rt-14-dev"
n=0

echo "1..4"

fail_build() {
	echo "not ok $((n + 1)) - build the fuzz target: $*"
	echo "not ok $((n + 2)) - fuzz run # not run: no target"
	exit 1
}

case $secs in
''|*[!0-9]*) fail_build "FUZZ_SECONDS='$secs' is not a whole number" ;;
esac
# libFuzzer reads -max_total_time=0 as "forever"
[ "$secs" -ge 1 ] || secs=1
[ -f "$builddir/autoconf.h" ] ||
    fail_build "no autoconf.h in $builddir (run configure there, or set RUNNEL_BUILDDIR)"
mkdir -p "$out/artifacts" || fail_build "cannot create $out"

cc=${FUZZ_CC:-}
if [ -z "$cc" ]; then
	for c in clang clang-14; do
		if command -v "$c" >/dev/null 2>&1; then
			cc=$c
			break
		fi
	done
fi
[ -n "$cc" ] ||
    fail_build "clang not found: install the Debian packages $pkgs (apt-get install $pkgs)"
san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
# the runtime ships separately from the compiler: probe it on its own
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return (int)(d != 0 && n > 1 ? 0 : 0); }\n' \
    >"$out/probe.c"
# shellcheck disable=SC2086 # $san is a list of flags
if ! "$cc" $san -o "$out/probe" "$out/probe.c" >"$out/probe.log" 2>&1; then
	sed 's/^/# /' "$out/probe.log" | tail -5
	fail_build "$cc cannot link -fsanitize=fuzzer: install the Debian packages $pkgs (apt-get install $pkgs)"
fi
rm -f "$out/probe" "$out/probe.c" "$out/probe.log"
bsd=$(pkg-config --cflags --libs libbsd-overlay 2>/dev/null) ||
    fail_build "pkg-config libbsd-overlay failed: install the Debian packages libbsd-dev pkg-config"

# build_target NAME SOURCE...: tests/fuzz/fuzz_NAME.c with the sources it
# needs, instrumented; TAP line n+1.
build_target() {
	name=$1
	shift
	bin=$out/fuzz_$name
	# shellcheck disable=SC2086 # $san and $bsd are lists of flags
	if "$cc" $san -g -O1 -std=gnu11 -Wall -Wextra -Wno-unused-parameter \
	    -I"$srcdir" -I"$builddir" -o "$bin" \
	    "$srcdir/tests/fuzz/fuzz_$name.c" "$@" $bsd \
	    >"$out/build-$name.log" 2>&1; then
		echo "ok $((n + 1)) - build the $name fuzz target with $cc (libFuzzer, ASan, UBSan)"
	else
		sed 's/^/# /' "$out/build-$name.log" | tail -20
		fail_build "compiling fuzz_$name failed (see $out/build-$name.log)"
	fi
}

# run_target NAME CORPUS SECONDS [libFuzzer flags]: TAP line n+2.
run_target() {
	name=$1 corpus=$2 t=$3
	shift 3
	bin=$out/fuzz_$name
	# libFuzzer adds what it finds to the corpus dir: a scratch copy
	work=$(mktemp -d "${TMPDIR:-/tmp}/runnel-fuzz.XXXXXX") || exit 1
	cp -R "$srcdir/tests/fuzz/$corpus" "$work/corpus"
	log=$out/fuzz-$name.log
	UBSAN_OPTIONS=print_stacktrace=1 "$bin" -max_total_time="$t" \
	    -max_len=65536 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
	    -artifact_prefix="$out/artifacts/" "$@" "$work/corpus" >"$log" 2>&1
	rc=$?
	rm -rf "$work"
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
		echo "ok $((n + 2)) - $name: no crash in $runs runs ($rate exec/s, $cov, ${t}s)"
		n=$((n + 2))
		return 0
	fi
	echo "not ok $((n + 2)) - $name: fuzz run failed (exit $rc after ${runs:-?} runs)"
	grep -E "ERROR|runtime error|SUMMARY|fuzz_$name:|^    #[0-9]+ " "$log" |
	    head -30 | sed 's/^/# /'
	for a in $(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log"); do
		echo "# input kept in $a; replay: $bin $a"
	done
	echo "# full log: $log"
	n=$((n + 2))
	failed=1
}

failed=0
build_target request \
    "$srcdir/protocol/kcodec.c" "$srcdir/protocol/kframe.c" \
    "$srcdir/protocol/kerrors.c" "$srcdir/common/arena.c" \
    "$srcdir/protocol/kmsg_gen.c" \
    "$srcdir/storage/batch.c" "$srcdir/storage/crc32c.c" \
    "$srcdir/common/util.c"
run_target request corpus "$secs" -dict="$srcdir/tests/fuzz/request.dict"
build_target config \
    "$srcdir/common/config.c" "$srcdir/common/kconfig.c" \
    "$srcdir/common/kconfig_catalogue.c" \
    "$srcdir/common/util.c"
csecs=$((secs / 3))
[ "$csecs" -ge 5 ] || csecs=5
run_target config corpus-config "$csecs"
exit $failed
