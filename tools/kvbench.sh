#!/usr/bin/env bash
# roundtable beside its peers (docs/benchmarks.md, "Side by side"):
#
#   tools/kvbench.sh [--quick] [OUT_DIR]      (default docs/figures/kvbench)
#   tools/kvbench.sh --plot [OUT_DIR]         redraws the plots of a run
#
# Installs the peers' Debian packages and gnuplot, builds kvbench, and runs:
#   main    10^6 records of 100 bytes: fills, reads (uniform, Zipf, missing),
#           overwrite, 50/50 read-update, scan, deletes
#   growth  10^7 records from empty with no size hint (an engine still
#           inserting after 15 minutes stops there), then 10^5 reads with
#           every file out of the page cache (readcold)
#   sync    10^4 durable writes, from 1 and then 2 threads
# Each writes OUT_DIR/<run>.jsonl (kvbench --json), <run>.csv and <run>.md;
# growth also growth_series.csv; then the plots growth_*.png and
# latency_*.png, and timings.txt. --quick runs every engine and workload on
# 20 000 records instead (a minute or two), into a temporary directory unless
# OUT_DIR is given. KVBENCH_DB_DIR sets where the stores go (default
# /tmp/kvbench; growth needs about 3 GB there).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
plot_only=0
if [ "${1:-}" = "--plot" ]; then plot_only=1; shift; fi
quick=()
if [ "${1:-}" = "--quick" ]; then quick=(--quick); shift; fi
if [ ${#quick[@]} -gt 0 ]; then
  out=${1:-$(mktemp -d /tmp/kvbench-XXXXXX)}
else
  out=${1:-$top/docs/figures/kvbench}
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Plots: growth over time, and latency percentiles of the main workloads.
plot() {
# Each sample's rate is its inserts over its own length (a sample that
# holds a long pause lasts more than a second).
awk -F, 'NR > 1 { if ($1 != e) { e = $1; t = 0 }
                  d = $2 - t; t = $2
                  printf "%s,%s,%s,%s,%s,%s,%.1f\n", $1, $2, $3, $4, $5, $6, (d > 0 ? $3 / d : 0) }' \
  "$out/growth_series.csv" >"$out/.growth_rates.csv"
engines=$(cut -d, -f1 "$out/.growth_rates.csv" | uniq | tr '\n' ' ')
gnuplot <<GNUPLOT
set datafile separator ","
set terminal pngcairo size 1100,700 noenhanced
set key outside right
set grid
# Nine engines, nine colours.
set linetype 1 lc rgb "#e41a1c" lw 2
set linetype 2 lc rgb "#377eb8" lw 2
set linetype 3 lc rgb "#4daf4a" lw 2
set linetype 4 lc rgb "#984ea3" lw 2
set linetype 5 lc rgb "#ff7f00" lw 2
set linetype 6 lc rgb "#a65628" lw 2
set linetype 7 lc rgb "#f781bf" lw 2
set linetype 8 lc rgb "#999999" lw 2
set linetype 9 lc rgb "#000000" lw 2
set linetype cycle 9
engines = "$engines"
f = "$out/.growth_rates.csv"
set xlabel "records stored (millions)"
set output "$out/growth_throughput.png"
set title "growth from empty, no size hint: inserts per second, sampled each second"
set ylabel "inserts/s"
set logscale y
plot for [e in engines] f using (strcol(1) eq e ? \$5/1e6 : NaN):(strcol(1) eq e ? \$7 : NaN) with lines lw 2 title e
set output "$out/growth_max_latency.png"
set title "growth: the slowest insert of each second"
set ylabel "max latency (us)"
plot for [e in engines] f using (strcol(1) eq e ? \$5/1e6 : NaN):(strcol(1) eq e ? \$4 : NaN) with lines lw 2 title e
unset logscale y
set output "$out/growth_size.png"
set title "growth: bytes on disk"
set ylabel "MB on disk"
plot for [e in engines] f using (strcol(1) eq e ? \$5/1e6 : NaN):(strcol(1) eq e ? \$6/1e6 : NaN) with lines lw 2 title e
GNUPLOT
rm -f "$out/.growth_rates.csv"
for b in fillrandom readrandom readmissing overwrite; do
  grep -E "^[^,]+,$b," "$out/main.csv" | cut -d, -f1,11,12,13 >"$out/.latency_$b.csv" || true
  [ -s "$out/.latency_$b.csv" ] || continue
  gnuplot <<GNUPLOT
set datafile separator ","
set terminal pngcairo size 1000,600 noenhanced
set output "$out/latency_$b.png"
set title "$b: latency percentiles (us, log scale)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set logscale y
set grid ytics
set xtics rotate by -30
set key top left
plot "$out/.latency_$b.csv" using 2:xtic(1) title "p50", '' using 3 title "p99", '' using 4 title "p99.9"
GNUPLOT
  rm -f "$out/.latency_$b.csv"
done
}

if [ "$plot_only" -eq 1 ]; then
  "$top/tools/setup.sh" gnuplot-nox
else
  "$top/tools/setup.sh" --peers gnuplot-nox
  "$top/tools/build.sh" build -- --target kvbench >/dev/null
  kvbench="$top/build/bench/kvbench"
  db_dir=${KVBENCH_DB_DIR:-/tmp/kvbench}

  run() {  # name flags...: one kvbench run, its outputs and its time
    local name=$1 start end
    shift
    start=$(date +%s)
    "$kvbench" --db_dir="$db_dir" --json --csv="$out/$name.csv" \
      --markdown="$out/$name.md" "${quick[@]}" "$@" >"$out/$name.jsonl"
    end=$(date +%s)
    echo "$name: $((end - start)) s ($(date -u +%F), $(git -C "$top" rev-parse --short HEAD), $(nproc) cores)" \
      | tee -a "$out/timings.txt"
  }

  if [ ${#quick[@]} -gt 0 ]; then
    run main --benchmarks=fillseq,fillrandom,readrandom,readzipf,readmissing,overwrite,readrandomwriterandom,readseq,deleterandom
    run growth --benchmarks=growth,readcold --series_csv="$out/growth_series.csv"
    run sync1 --benchmarks=fillsync --threads=1
    run sync2 --benchmarks=fillsync --threads=2
  else
    run main --num=1000000 \
      --benchmarks=fillseq,fillrandom,readrandom,readzipf,readmissing,overwrite,readrandomwriterandom,readseq,deleterandom
    run growth --num=10000000 --reads=100000 --duration=900 \
      --benchmarks=growth,readcold --series_csv="$out/growth_series.csv"
    run sync1 --num=1000000 --sync_writes=10000 --benchmarks=fillsync --threads=1
    run sync2 --num=1000000 --sync_writes=10000 --benchmarks=fillsync --threads=2
  fi
fi
plot
echo "results in $out"
