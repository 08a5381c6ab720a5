#!/usr/bin/env bash
# Every kvbench engine at value sizes from 100 bytes to 1 MiB
# (docs/benchmarks.md, "Values of any size"):
#
#   tools/kvbench_values.sh [--rounds=N] [--quick] [OUT_DIR]
#                                   (default docs/figures/kvbench_values)
#
# For each value size (100 B, 1000 B, 4 KiB, 64 KiB, 1 MiB, with fewer
# records at the larger sizes: about 30 to 400 MB of values each) and each
# engine: fillrandom, readrandom, overwrite and deleterandom, each engine in
# a process of its own, after a sync and an emptied page cache (where this
# user may drop it), so that no engine pays for the previous one's dirty
# pages. Rounds (3 by default) take the engines in alternating order.
# Writes OUT_DIR/values.csv (kvbench's rows, a round column first) and
# OUT_DIR/values.md (the medians, per size, in operations a second).
# --quick: one round of a tenth of the records, into a temporary directory
# unless OUT_DIR is given. KVBENCH_DB_DIR sets where the stores go (default
# /tmp/kvbench_values; about 1 GB there).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
scale=1
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds=*) rounds=${1#--rounds=}; shift ;;
    --quick) quick=1; rounds=1; scale=10; shift ;;
    *) break ;;
  esac
done
if [ "$quick" -eq 1 ]; then
  out=${1:-$(mktemp -d /tmp/kvbench-values-XXXXXX)}
else
  out=${1:-$top/docs/figures/kvbench_values}
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$top/tools/setup.sh" --peers
"$top/tools/build.sh" build -- --target kvbench >/dev/null
kvbench="$top/build/bench/kvbench"
db_dir=${KVBENCH_DB_DIR:-/tmp/kvbench_values}

# size:records
sizes="100:300000 1000:100000 4096:50000 65536:6000 1048576:400"
engines=$("$kvbench" --db_dir="$db_dir/probe" --num=10 --benchmarks=fillrandom \
  --csv=/dev/stdout 2>/dev/null | awk -F, 'NR > 1 { print $1 }' | tr '\n' ' ')
rm -rf "$db_dir/probe"
reversed=$(echo "$engines" | tr ' ' '\n' | tac | tr '\n' ' ')

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; fi
}

csv="$out/values.csv"
rm -f "$csv"
start=$(date +%s)
for round in $(seq 1 "$rounds"); do
  order=$engines
  if [ $((round % 2)) -eq 0 ]; then order=$reversed; fi
  for pair in $sizes; do
    size=${pair%%:*}
    num=$((${pair##*:} / scale))
    for engine in $order; do
      rm -rf "$db_dir"
      drop_caches
      "$kvbench" --db_dir="$db_dir" --engines="$engine" --num="$num" \
        --value_size="$size" \
        --benchmarks=fillrandom,readrandom,overwrite,deleterandom \
        --csv="$out/.run.csv" >/dev/null
      if [ ! -s "$csv" ]; then
        head -n 1 "$out/.run.csv" | sed 's/^/round,/' >"$csv"
      fi
      tail -n +2 "$out/.run.csv" | sed "s/^/$round,/" >>"$csv"
      echo "round $round, $size-byte values, $engine: done ($(($(date +%s) - start)) s)"
    done
  done
done
rm -rf "$db_dir" "$out/.run.csv"

python3 - "$csv" "$out/values.md" "$rounds" \
  "$(date -u +%F)" "$(git -C "$top" rev-parse --short HEAD)" "$(nproc)" <<'PY'
import csv, statistics, sys
from collections import defaultdict
path, md, rounds, day, commit, cores = sys.argv[1:7]
ops = defaultdict(list)  # (size, benchmark, engine) -> ops/s of each round
disk = defaultdict(list)  # (size, engine) -> MB on disk after the fill
engines, sizes = [], []
for row in csv.DictReader(open(path)):
    size, engine, bench = int(row["value_size"]), row["engine"], row["benchmark"]
    if engine not in engines: engines.append(engine)
    if size not in sizes: sizes.append(size)
    ops[(size, bench, engine)].append(float(row["ops_per_s"]))
    if bench == "fillrandom":
        disk[(size, engine)].append(float(row["bytes_on_disk"]) / 1e6)
benches = ["fillrandom", "readrandom", "overwrite", "deleterandom"]
with open(md, "w") as f:
    f.write(f"Medians of {rounds} rounds, operations a second ({day}, commit "
            f"{commit}, {cores} cores); MB on disk after the fill.\n")
    for size in sorted(sizes):
        f.write(f"\n**{size}-byte values**\n\n| engine | " +
                " | ".join(benches) + " | MB on disk |\n")
        f.write("|---" * (len(benches) + 2) + "|\n")
        for e in engines:
            cells = []
            for b in benches:
                v = ops.get((size, b, e))
                cells.append(f"{statistics.median(v):,.0f}" if v else "-")
            d = disk.get((size, e))
            cells.append(f"{statistics.median(d):.0f}" if d else "-")
            f.write(f"| {e} | " + " | ".join(cells) + " |\n")
print(open(md).read())
PY
echo "results in $out"
