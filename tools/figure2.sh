#!/usr/bin/env bash
# Reproduces the round-hashing paper's Figure 2 on this machine: ns per lookup
# against bucket count for every mapping, from bench/mapping_bench.
#
#   tools/figure2.sh [--reuse] [OUT_DIR]     (default docs/figures)
#
# --reuse redraws the plot and the table from an existing OUT_DIR/figure2.csv
# without running the benchmark.
#
# Writes OUT_DIR/figure2.csv (Google Benchmark's CSV, with the median of 5
# repetitions), OUT_DIR/figure2.png (gnuplot), and prints a Markdown table and
# the two figures the project checks: round-mapping's slowest / fastest median
# over 2^4 .. 2^30 buckets, and jump / round at 2^20.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
reuse=0
if [ "${1:-}" = "--reuse" ]; then reuse=1; shift; fi
out=${1:-$top/docs/figures}
mkdir -p "$out"
"$top/tools/setup.sh" gnuplot-nox
csv="$out/figure2.csv"
if [ "$reuse" -eq 0 ]; then
"$top/tools/build.sh" build >/dev/null
# Random interleaving spreads the repetitions of every point over the whole
# run, so that drift of a shared machine's speed does not bend the curves.
"$top/build/bench/mapping_bench" --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
  --benchmark_out="$csv" --benchmark_out_format=csv >/dev/null
fi

dat=$(mktemp)
trap 'rm -f "$dat"' EXIT
# scheme m ns: the median rows, time_per_lookup (last column) in ns.
awk -F, '/_median"/ {
  name = $1; gsub(/"/, "", name); sub(/_median$/, "", name)
  ns = $NF * 1e9
  n = split(name, part, "/")
  if (part[1] == "BM_Mapping_Find") print part[2], part[3], ns
  else if (part[1] == "BM_Mapping_HashThenRound") print "xxh3+round", part[2], ns
  else if (part[1] == "BM_Hash_Xxh3") print "xxh3-alone", 0, ns
  else if (part[1] == "BM_Sum") print "sum-alone", 0, ns
}' "$csv" | sort -k1,1 -k2,2n > "$dat"

schemes="round jump linear-slack linear-litwin modulo xxh3+round"
if command -v gnuplot >/dev/null; then
  plot=""
  for s in $schemes; do
    plot+="'< grep \"^$s \" $dat' using 2:3 with linespoints title '$s', "
  done
  xxh=$(awk '$1 == "xxh3-alone" {print $3}' "$dat")
  plot+="$xxh with lines dashtype 2 title 'xxh3 alone'"
  gnuplot <<GP
set terminal pngcairo size 1000,600 font "sans,11"
set output "$out/figure2.png"
set title "ns per lookup vs bucket count (median of 5; pre-hashed 64-bit keys)"
set xlabel "buckets m"
set ylabel "ns per lookup"
set logscale x 2
set logscale y
set format x "2^{%L}"
set key top left
set grid
plot $plot
GP
  echo "plot: $out/figure2.png"
else
  echo "gnuplot is not installed: no plot (apt-get install gnuplot-nox)"
fi

echo
printf '| m |'; for s in $schemes; do printf ' %s |' "$s"; done; echo
printf '|---|'; for s in $schemes; do printf -- '---|'; done; echo
for m in $(awk '$1 == "round" {print $2}' "$dat" | sort -n); do
  printf '| %s |' "$m"
  for s in $schemes; do
    awk -v s="$s" -v m="$m" '$1 == s && $2 == m {printf " %.2f |", $3}' "$dat"
  done
  echo
done
awk '$1 == "xxh3-alone" {x = $3} $1 == "sum-alone" {l = $3}
     END {printf "\nxxh3 alone: %.2f ns; loop with no mapping: %.2f ns\n", x, l}' "$dat"
awk '$1 == "round" { if (min == "" || $3 < min) min = $3; if ($3 > max) max = $3 }
     $1 == "round" && $2 == 1048576 { r = $3 }
     $1 == "jump" && $2 == 1048576 { j = $3 }
     END { printf "round: fastest %.2f ns, slowest %.2f ns, slowest/fastest %.3f\n", min, max, max / min
           printf "at 2^20 buckets: jump %.2f ns / round %.2f ns = %.1fx\n", j, r, j / r }' "$dat"
