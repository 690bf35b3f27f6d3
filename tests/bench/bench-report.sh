#!/bin/sh
# Write the bench's report directory from a finished run's work dir:
#
#   tests/bench/bench-report.sh WORK REPORT_DIR
#
# REPORT_DIR gets table.txt (run-bench.sh appends it), json/ (the
# --print-json line of every run, NAME.PEER.json), data/ (throughput over
# time, NAME.PEER.tput: "seconds records/s MB/s"; latency CDFs,
# NAME.PEER.cdf: "percentile ms") and, when gnuplot is installed, the
# plots (PNG): throughput over time of the raw runs and of the long
# librdkafka runs, and the latency CDFs. Without gnuplot it says so and
# skips the plots; it never fails the bench (exit 0).
set -u

work=$1 report=$2
mkdir -p "$report/json" "$report/data" || exit 0

for f in "$work"/*.out; do
	[ -e "$f" ] || continue
	run=$(basename "$f" .out) # NAME.PEER
	[ -s "$work/$run" ] && cp "$work/$run" "$report/json/$run.json"
	[ -s "$work/$run.cdf" ] && cp "$work/$run.cdf" "$report/data/$run.cdf"
	if grep -q '^interval ' "$f"; then
		# raw verbs: "interval SECONDS RECORDS/S MB/S" on stdout
		awk '$1 == "interval" { print $2, $3, $4 }' "$f"
	else
		# librdkafka verbs: a window line on stderr every 500 ms,
		# "N records, R records/s (M MB/s)..."
		awk '/ records, [0-9.]+ records\/s \(/ {
			t += 0.5; m = $5; sub(/\(/, "", m); print t, $3, m }' \
		    "$work/$run.err" 2>/dev/null
	fi >"$report/data/$run.tput"
	[ -s "$report/data/$run.tput" ] || rm -f "$report/data/$run.tput"
done

if ! command -v gnuplot >/dev/null 2>&1; then
	echo "bench: no plots: gnuplot is not installed (apt-get install gnuplot-nox); data in $report/data" >&2
	exit 0
fi

# plot OUT TITLE XLABEL YLABEL EXTRA FILE|COLUMNS|LEGEND...: one PNG, one
# line per file that exists
plot() {
	out=$1 title=$2 xl=$3 yl=$4 extra=$5
	shift 5
	series=
	for s in "$@"; do
		f=${s%%|*} rest=${s#*|}
		cols=${rest%%|*} legend=${rest#*|}
		[ -s "$f" ] || continue
		series="$series${series:+, }'$f' using $cols with lines lw 2 title '$legend'"
	done
	[ -n "$series" ] || return 0
	gnuplot <<EOF 2>>"$report/gnuplot.log" ||
set terminal pngcairo size 1000,600 noenhanced
set output '$report/$out'
set title '$title'
set xlabel '$xl'
set ylabel '$yl'
set grid
set key outside right
$extra
plot $series
EOF
	    echo "bench: gnuplot could not draw $out (see $report/gnuplot.log)" >&2
}

d=$report/data
plot throughput-raw.png "runnel, raw load generator: throughput over time" \
    "seconds" "MB/s of record data" "" \
    "$d/rawp1.runnel.tput|1:3|raw produce 1 KiB, acks=1" \
    "$d/rawpall.runnel.tput|1:3|raw produce 1 KiB, acks=all" \
    "$d/rawf.runnel.tput|1:3|raw fetch"
plot throughput-sustained.png "sustained 1 KiB ingest: throughput over time" \
    "seconds" "MB/s" "" \
    "$d/sustpc.tput|1:3|page cache, one writer, no broker (1 s windows)" \
    "$d/sust1k.runnel.tput|1:3|runnel, librdkafka acks=1 (0.5 s windows)"
for name in p1ka1 p1kaall p100a1 call; do
	set --
	for f in "$d/$name".*.tput; do
		[ -e "$f" ] || continue
		peer=${f#"$d/$name".}
		set -- "$@" "$f|1:3|${peer%.tput}"
	done
	[ $# -gt 0 ] && plot "throughput-$name.png" \
	    "$name (librdkafka runnel-perf): throughput over time" \
	    "seconds (0.5 s windows)" "MB/s of record payload" "" "$@"
done
set --
for name in lat1 latall; do
	for f in "$d/$name".*.cdf; do
		[ -e "$f" ] || continue
		peer=${f#"$d/$name".}
		set -- "$@" "$f|2:1|$name ${peer%.cdf}"
	done
done
[ $# -gt 0 ] && plot latency-cdf.png \
    "produce latency CDF at a fixed rate (librdkafka, call to delivery report)" \
    "ms (log scale)" "percentile" "set logscale x" "$@"
plot latency-raw.png "raw produce: request latency CDF (send to response)" \
    "ms (log scale)" "percentile" "set logscale x" \
    "$d/rawp1.runnel.cdf|2:1|acks=1" "$d/rawpall.runnel.cdf|2:1|acks=all"
echo "bench: report in $report" >&2
exit 0
