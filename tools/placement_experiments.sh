#!/usr/bin/env bash
# Measures the placement schemes (docs/placement.md) with
# `roundtable experiment placement` and bench/placement_bench:
#
#   tools/placement_experiments.sh [--quick | --plot] [OUT_DIR]
#                                  (default docs/figures/placement)
#
# Writes one CSV (and a Markdown table) per question, PNG plots when gnuplot
# is installed, the lookup benchmark as lookup.csv, and the time each step
# took in timings.txt:
#   overview    every scheme at 10 .. 10^4 nodes, 10^6 keys
#   multiprobe  peak-to-average against probes K (published: K / (K - 1))
#   bounded     moves against c = 1 + epsilon (published: O(1 / epsilon^2))
#   dchoice     n keys on n nodes, d = 1 .. 4, n up to 10^6
#   ring        imbalance against virtual nodes V
#   round       peak-to-average against s0 (bound 1 + 1 / s0)
# About 15 minutes on 2 cores. --quick runs tiny sizes (seconds) into a
# temporary directory unless OUT_DIR is given; --plot only redraws the plots
# from an earlier run's CSVs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
quick=0 plot_only=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
if [ "${1:-}" = "--plot" ]; then plot_only=1; shift; fi
if [ $quick = 1 ]; then
  out=${1:-$(mktemp -d /tmp/roundtable-placement-XXXXXX)}
else
  out=${1:-$top/docs/figures/placement}
fi
mkdir -p "$out"
"$top/tools/setup.sh" gnuplot-nox

measure() {
  "$top/tools/build.sh" build -- --target roundtable placement_bench >/dev/null
  rt="$top/build/tools/roundtable"

  source "$top/tools/timed.sh"

  # The sizes of each question, full and --quick.
  if [ $quick = 1 ]; then
    overview_nodes=10,100 overview_keys=20000
    probe_keys=20000 bounded_keys=20000 ring_keys=20000 round_keys=20000
    dchoice_nodes=(1000 10000) runs=1
    bench=(--benchmark_filter='/(10|1000)$' --benchmark_min_time=0.01s)
  else
    overview_nodes=10,100,1000,10000 overview_keys=1000000
    probe_keys=4000000 bounded_keys=1000000 ring_keys=10000000
    round_keys=10000000 dchoice_nodes=(1000 10000 100000 1000000) runs=3
    bench=(--benchmark_min_time=0.2s --benchmark_repetitions=3
           --benchmark_report_aggregates_only=true)
  fi

  place() {  # name flags...: one experiment into $out/name.{csv,md}
    local name=$1
    shift
    timed "$name" "$rt" experiment placement --seed=1 --runs=$runs \
      --csv="$out/$name.csv" "$@" >"$out/$name.md"
    cat "$out/$name.md"
  }

  place overview --nodes=$overview_nodes --keys=$overview_keys
  place multiprobe --algorithms=multiprobe --probes=1,2,3,5,9,21,51 \
    --nodes=100 --keys=$probe_keys
  place bounded --algorithms=bounded --c=1.01,1.02,1.05,1.1,1.25,1.5,2,3 \
    --nodes=1000 --keys=$bounded_keys --timing=false
  place ring --algorithms=ring --vnodes=1,10,100,1000 --nodes=100,1000 \
    --keys=$ring_keys --timing=false
  place round --algorithms=round --s0=1,2,4,8,16,32 --nodes=100,700,1000 \
    --keys=$round_keys --timing=false
  # n keys on n nodes: one run per n, gathered in one CSV.
  rm -f "$out/dchoice.csv" "$out/dchoice.md"
  for n in "${dchoice_nodes[@]}"; do
    timed "dchoice n=$n" "$rt" experiment placement --seed=1 --runs=$runs \
      --algorithms=dchoice,jump --choices=1,2,3,4 --nodes="$n" --keys="$n" \
      --timing=false --csv="$out/dchoice_$n.csv" >>"$out/dchoice.md"
    if [ ! -f "$out/dchoice.csv" ]; then
      cat "$out/dchoice_$n.csv" >"$out/dchoice.csv"
    else
      tail -n +2 "$out/dchoice_$n.csv" >>"$out/dchoice.csv"
    fi
    rm "$out/dchoice_$n.csv"
  done
  cat "$out/dchoice.md"

  timed "lookup benchmark" "$top/build/bench/placement_bench" "${bench[@]}" \
    --benchmark_out="$out/lookup.csv" --benchmark_out_format=csv
}

[ $plot_only = 1 ] || measure

if command -v gnuplot >/dev/null; then
  gnuplot <<EOF
set terminal pngcairo size 900,500 font ',9'
set datafile separator ','
set grid
set key outside right noenhanced

set output '$out/overview.png'
set xlabel 'nodes (10^6 keys)'
set ylabel 'peak-to-average load (mean of the runs)'
set logscale x
set yrange [1:*]
plot for [a in "round jump rendezvous ring maglev bounded multiprobe dchoice"] \
       '$out/overview.csv' skip 1 using 2:(strcol(1) eq a ? column(6) : NaN) \
       smooth unique with linespoints title a
unset logscale x
set autoscale y

set output '$out/multiprobe.png'
set xlabel 'probes K'
set ylabel 'peak-to-average load'
set logscale x
plot '$out/multiprobe.csv' skip 1 using (real(substr(strcol(4), 8, 9))):6 \
       with points pt 7 title 'measured (100 nodes)', \
     [1.5:60] x / (x - 1) with lines dt 2 title 'K / (K - 1)'
unset logscale x

set output '$out/bounded.png'
set xlabel '1 / epsilon (c = 1 + epsilon)'
set ylabel 'keys moved / ideal'
set logscale xy
set xrange [0.4:150]
plot '$out/bounded.csv' skip 1 using (1 / (real(substr(strcol(4), 3, 9)) - 1)):(column(9) / column(10)) \
       with points pt 7 title 'adding a node', \
     '' skip 1 using (1 / (real(substr(strcol(4), 3, 9)) - 1)):(column(11) / column(12)) \
       with points pt 5 title 'removing a node', \
     x**2 with lines dt 2 title '1 / epsilon^2 (the bound, constant 1)'
unset logscale xy
set autoscale x

set output '$out/dchoice.png'
set xlabel 'n keys on n nodes'
set ylabel 'fullest node (keys)'
set logscale x
plot for [d=1:4] '$out/dchoice.csv' skip 1 \
       using 2:(strcol(1) eq 'dchoice' && strcol(4) eq sprintf('choices=%d', d) ? column(8) : NaN) \
       with points pt 7 title sprintf('ring, d = %d', d), \
     '$out/dchoice.csv' skip 1 using 2:(strcol(1) eq 'jump' ? column(8) : NaN) \
       with points pt 4 title 'uniform, one choice (jump)'
EOF
fi
echo "results in $out"
