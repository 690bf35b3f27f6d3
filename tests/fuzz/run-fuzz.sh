#!/bin/sh
# Build the fuzz targets with libFuzzer, ASan and UBSan and run each for a
# bounded time over a copy of its seed corpus (tests/fuzz/corpus-NAME/;
# the request decoder's is corpus/):
#   request   the Kafka request decoder (fuzz_request.c)
#   config    the server.properties parser (fuzz_config.c)
#   ctl       a control-socket request as runneld decodes it (fuzz_ctl.c)
#   records   metadata-log entries and snapshots applied to a fresh
#             controller state (fuzz_records.c)
#   raft      what the controller listener makes of a connection's first
#             bytes: the raft preamble, and the transport over loopback
#             (fuzz_raft.c)
#   segment   a segment's .log through batch validation and crash
#             recovery (fuzz_segment.c)
# Prints TAP: per target, the build, then "no crash in N runs".
#
#   RUNNEL_BUILDDIR=./build FUZZ_SECONDS=600 tests/fuzz/run-fuzz.sh
#   RUNNEL_BUILDDIR=./build FUZZ_EACH=120 FUZZ_TARGETS=segment \
#       tests/fuzz/run-fuzz.sh
#
# The sources are compiled directly (not through librunnel.a): the target
# needs the sanitizer and coverage instrumentation in the code it fuzzes.
# A crash leaves its input in $builddir/tests/fuzz/artifacts/ and the log
# says how to replay it. Missing clang or its fuzzer runtime is a failure,
# not a skip: CI must not go green without having fuzzed.
#
# Environment:
#   RUNNEL_SRCDIR    source tree (default: this script's ../..)
#   RUNNEL_BUILDDIR  configured build dir holding autoconf.h (./build)
#   FUZZ_SECONDS     the fuzzing time shared by the targets run (60): the
#                    request decoder gets half, the others the rest in
#                    equal parts, at least 1 s each (make check)
#   FUZZ_EACH        if set, every target runs this many seconds instead
#                    (make fuzz: 600)
#   FUZZ_TARGETS     the targets to run, by name (all of them)
#   FUZZ_CC          compiler (clang, else clang-14)
set -u

srcdir=${RUNNEL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${RUNNEL_BUILDDIR:-$srcdir/build}
secs=${FUZZ_SECONDS:-60}
each=${FUZZ_EACH:-}
all="request config ctl records raft segment"
targets=${FUZZ_TARGETS:-$all}
out=$builddir/tests/fuzz
pkgs="clang-14 libclang-rt-14-dev"
n=0

# shellcheck disable=SC2086 # a list of names
set -- $targets
echo "1..$(($# * 2))"

fail_build() {
	echo "not ok $((n + 1)) - build the fuzz target: $*"
	echo "not ok $((n + 2)) - fuzz run # not run: no target"
	exit 1
}

for t in $targets; do
	case " $all " in
	*" $t "*) ;;
	*) fail_build "FUZZ_TARGETS names '$t'; the targets are: $all" ;;
	esac
done
case $secs in
''|*[!0-9]*) fail_build "FUZZ_SECONDS='$secs' is not a whole number" ;;
esac
case $each in
*[!0-9]*) fail_build "FUZZ_EACH='$each' is not a whole number" ;;
esac
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
# what configure found; msgpack-c is "msgpack" on Debian 12
mp=$(pkg-config --cflags --libs msgpack-c 2>/dev/null ||
    pkg-config --cflags --libs msgpack 2>/dev/null) ||
    fail_build "pkg-config msgpack-c failed: install the Debian package libmsgpack-dev"
uvraft=$(pkg-config --cflags --libs raft libuv 2>/dev/null) ||
    fail_build "pkg-config raft libuv failed: install the Debian packages libraft-dev libuv1-dev"

# seconds: how long the target $name runs.
seconds() {
	if [ -n "$each" ]; then
		t=$each
	else
		# shellcheck disable=SC2086 # a list of names
		set -- $targets
		case " $targets " in
		*" request "*)
			if [ $# -eq 1 ]; then
				t=$secs
			elif [ "$name" = request ]; then
				t=$((secs / 2))
			else
				t=$(((secs - secs / 2) / ($# - 1)))
			fi ;;
		*) t=$((secs / $#)) ;;
		esac
	fi
	# libFuzzer reads -max_total_time=0 as "forever"
	[ "$t" -ge 1 ] || t=1
	echo "$t"
}

# build_target NAME SOURCE|FLAG...: tests/fuzz/fuzz_NAME.c with the
# sources it needs, instrumented, and the flags of its libraries; TAP
# lines n+1 and, when it fails, n+2.
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
		return 0
	fi
	sed 's/^/# /' "$out/build-$name.log" | tail -20
	echo "not ok $((n + 1)) - build the $name fuzz target: compiling fuzz_$name failed (see $out/build-$name.log)"
	echo "not ok $((n + 2)) - $name: fuzz run # not run: no target"
	n=$((n + 2))
	failed=1
	return 1
}

# run_target NAME CORPUS [libFuzzer flags]: TAP line n+2.
run_target() {
	name=$1 corpus=$2
	shift 2
	t=$(seconds)
	bin=$out/fuzz_$name
	# libFuzzer adds what it finds to the corpus dir: a scratch copy, and
	# a scratch dir for the targets that need files
	work=$(mktemp -d "${TMPDIR:-/tmp}/runnel-fuzz.XXXXXX") || exit 1
	cp -R "$srcdir/tests/fuzz/$corpus" "$work/corpus"
	log=$out/fuzz-$name.log
	FUZZ_SCRATCH=$work/scratch UBSAN_OPTIONS=print_stacktrace=1 \
	    "$bin" -max_total_time="$t" \
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
	grep -E "ERROR|runtime error|SUMMARY|fuzz_[a-z]*: |^    #[0-9]+ " "$log" |
	    head -30 | sed 's/^/# /'
	for a in $(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log"); do
		echo "# input kept in $a; replay: $bin $a"
	done
	echo "# full log: $log"
	n=$((n + 2))
	failed=1
}

# fuzz NAME: build and run one target.
fuzz() {
	name=$1
	case $name in
	request)
		build_target request \
		    "$srcdir/protocol/kcodec.c" "$srcdir/protocol/kframe.c" \
		    "$srcdir/protocol/kerrors.c" "$srcdir/common/arena.c" \
		    "$srcdir/protocol/kmsg_gen.c" \
		    "$srcdir/storage/batch.c" "$srcdir/storage/crc32c.c" \
		    "$srcdir/common/util.c" &&
		    run_target request corpus \
		    -dict="$srcdir/tests/fuzz/request.dict" ;;
	config)
		build_target config \
		    "$srcdir/common/config.c" "$srcdir/common/kconfig.c" \
		    "$srcdir/common/kconfig_catalogue.c" \
		    "$srcdir/common/util.c" &&
		    run_target config corpus-config ;;
	ctl)
		# shellcheck disable=SC2086 # $mp is a list of flags
		build_target ctl \
		    "$srcdir/supervisor/sv_request.c" \
		    "$srcdir/common/ctlproto.c" "$srcdir/common/mpbound.c" \
		    "$srcdir/common/util.c" $mp &&
		    run_target ctl corpus-ctl ;;
	records)
		# state.c, and what its image encoder and the workers' image
		# parser pull in
		# shellcheck disable=SC2086 # $mp is a list of flags
		build_target records \
		    "$srcdir/workers/controller/state.c" \
		    "$srcdir/workers/controller/records.c" \
		    "$srcdir/workers/controller/offline_dirs.c" \
		    "$srcdir/workers/controller/elect.c" \
		    "$srcdir/workers/controller/acls.c" \
		    "$srcdir/workers/controller/scram.c" \
		    "$srcdir/workers/controller/quotas.c" \
		    "$srcdir/ipc/mdimage.c" "$srcdir/ipc/mdimage_write.c" \
		    "$srcdir/ipc/shm.c" "$srcdir/ipc/wakeset.c" "$srcdir/ipc/ring.c" \
		    "$srcdir/ipc/prodpool.c" \
		    "$srcdir/ipc/metrics.c" "$srcdir/ipc/connlimit.c" \
		    "$srcdir/ipc/cquota.c" \
		    "$srcdir/common/acl.c" "$srcdir/common/scram.c" \
		    "$srcdir/common/scram_boot.c" \
		    "$srcdir/protocol/kmsg_gen.c" "$srcdir/protocol/kcodec.c" \
		    "$srcdir/protocol/kerrors.c" -lcrypto \
		    "$srcdir/common/ctlproto.c" "$srcdir/common/mpbound.c" \
		    "$srcdir/common/config.c" "$srcdir/common/kconfig.c" \
		    "$srcdir/common/kconfig_catalogue.c" \
		    "$srcdir/common/arena.c" "$srcdir/common/util.c" \
		    "$srcdir/common/log_subject.c" \
		    "$srcdir/tests/fuzz/fuzz_log.c" $mp &&
		    run_target records corpus-records \
		    -dict="$srcdir/tests/fuzz/records.dict" ;;
	raft)
		# shellcheck disable=SC2086 # $uvraft is a list of flags
		# (transport.c hands a secured listener's connections to
		# relay.c, which brings the login and the config with it)
		build_target raft \
		    "$srcdir/workers/controller/preamble.c" \
		    "$srcdir/workers/controller/transport.c" \
		    "$srcdir/workers/controller/relay.c" \
		    "$srcdir/workers/secure_client.c" \
		    "$srcdir/common/acl.c" "$srcdir/common/arena.c" \
		    "$srcdir/common/config.c" "$srcdir/common/kconfig.c" \
		    "$srcdir/common/kconfig_catalogue.c" \
		    "$srcdir/common/sasl_config.c" \
		    "$srcdir/common/ssl_config.c" "$srcdir/common/scram.c" \
		    "$srcdir/common/principal_map.c" \
		    "$srcdir/protocol/kcodec.c" "$srcdir/protocol/kframe.c" \
		    "$srcdir/protocol/kerrors.c" "$srcdir/protocol/kmsg_gen.c" \
		    "$srcdir/common/util.c" "$srcdir/common/log_subject.c" \
		    "$srcdir/tests/fuzz/fuzz_log.c" $uvraft -lssl -lcrypto \
		    -lpcre2-8 &&
		    run_target raft corpus-raft ;;
	segment)
		build_target segment \
		    "$srcdir/storage/segment.c" "$srcdir/storage/index.c" \
		    "$srcdir/storage/batch.c" "$srcdir/storage/crc32c.c" &&
		    run_target segment corpus-segment ;;
	esac
}

failed=0
for name in $targets; do
	fuzz "$name"
done
exit $failed
