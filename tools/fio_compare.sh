#!/usr/bin/env bash
# blockbench against fio on the same file, the same patterns, one after the
# other in one run (docs/benchmarks.md). Needs fio and jq (installed here).
#
#   tools/fio_compare.sh [FILE] [SECONDS]    (default /var/tmp/rt_fio_compare.dat, 10)
#
# Prints a Markdown table: IOPS and p50 latency of each tool per pattern,
# and the ratio blockbench / fio. Each tool runs twice per pattern, in the
# order fio, blockbench, blockbench, fio, and the table gives the means, so
# that a shared machine's drift falls on both alike.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
file=${1:-/var/tmp/rt_fio_compare.dat}
secs=${2:-10}
size=4G
"$top/tools/setup.sh" fio jq
"$top/tools/build.sh" build >/dev/null
bb="$top/build/tools/blockbench"

# Create and fill the file once (blockbench fills what is missing).
"$bb" --file="$file" --size=$size --pattern=read --seconds=0.1 >/dev/null

fio_run() {  # engine rw qd direct -> "iops p50_us"
  local engine=$1 rw=$2 qd=$3 direct=$4 kind=read
  [ "$rw" = randwrite ] && kind=write
  fio --name=cmp --filename="$file" --size=$size --bs=4k --rw="$rw" \
      --ioengine="$engine" --iodepth="$qd" --direct="$direct" \
      --runtime="$secs" --time_based --randrepeat=0 --norandommap --invalidate=0 \
      --output-format=json 2>/dev/null |
    jq -r ".jobs[0].$kind | \"\(.iops) \(.clat_ns.percentile[\"50.000000\"] / 1000)\""
}

bb_run() {  # backend pattern qd direct(0/1) -> "iops p50_us"
  local backend=$1 pattern=$2 qd=$3 direct=$4 flag=""
  [ "$direct" = 1 ] && flag=--direct
  "$bb" --file="$file" --size=$size --backend="$backend" --pattern="$pattern" \
        --qd="$qd" $flag --seconds="$secs" --json |
    jq -r '"\(.iops) \(.p50_us)"'
}

echo "| pattern | fio engine | fio IOPS | blockbench IOPS | ratio | fio p50 us | blockbench p50 us |"
echo "|---|---|---|---|---|---|---|"
row() {  # label fio_engine rw qd direct bb_backend
  local label=$1 engine=$2 rw=$3 qd=$4 direct=$5 backend=$6
  read -r fi1 fl1 < <(fio_run "$engine" "$rw" "$qd" "$direct")
  read -r bi1 bl1 < <(bb_run "$backend" "$rw" "$qd" "$direct")
  read -r bi2 bl2 < <(bb_run "$backend" "$rw" "$qd" "$direct")
  read -r fi2 fl2 < <(fio_run "$engine" "$rw" "$qd" "$direct")
  awk -v l="$label" -v e="$engine" -v fi=$(((${fi1%.*} + ${fi2%.*}) / 2)) \
      -v bi=$(((${bi1%.*} + ${bi2%.*}) / 2)) -v fl1="$fl1" -v fl2="$fl2" \
      -v bl1="$bl1" -v bl2="$bl2" \
    'BEGIN { printf "| %s | %s | %.0f | %.0f | %.2f | %.1f | %.1f |\n", l, e, fi, bi, bi / fi, (fl1 + fl2) / 2, (bl1 + bl2) / 2 }'
}
row "randread 4K direct qd1"  psync    randread  1  1 uring
row "randread 4K direct qd8"  io_uring randread  8  1 uring
row "randread 4K direct qd32" io_uring randread  32 1 uring
row "randwrite 4K direct qd1" psync    randwrite 1  1 uring
row "randwrite 4K direct qd32" io_uring randwrite 32 1 uring
# Warm the page cache, then buffered random reads.
cat "$file" > /dev/null
row "randread 4K buffered (warm) qd1" psync randread 1 0 uring
echo
echo "blockbench at qd > 1 reports latency per batch of 16 x qd requests, so its"
echo "p50 there is not comparable with fio's per-request completion latency."
