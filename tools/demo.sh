#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build a Release build in
# build/ and run the main job: the store's demo (a table in a temporary
# directory loaded with a million records, read back, half deleted), then a
# short tour of round-mapping (docs/mapping.md).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/setup.sh"
"$top/tools/build.sh" build
rt="$top/build/tools/roundtable"

echo
echo "== the store: roundtable demo --records=${RT_DEMO_RECORDS:-1000000} =="
"$rt" demo --records="${RT_DEMO_RECORDS:-1000000}"

echo
echo "== round-mapping with s0 = 3: the paper's Figure 1 =="
echo "\$ roundtable map --s0=3 --buckets=32 --grow=3"
echo "   (each line: the group's former buckets in arc order, then the new bucket)"
"$rt" map --s0=3 --buckets=32 --grow=3
echo "\$ roundtable map --s0=3 --buckets=35 --shrink=3"
"$rt" map --s0=3 --buckets=35 --shrink=3

echo
echo "== the bucket of a few 64-bit hashes, m = 10000 buckets, s0 = 64 =="
hashes=(0x0 0x2000000000000000 0x8000000000000000 0x9e3779b97f4a7c15 0xffffffffffffffff)
printf '%s\n' "${hashes[@]}" | "$rt" map --s0=64 --buckets=10000 |
  paste -d' ' <(printf '%s\n' "${hashes[@]}") - | awk '{printf "  %-20s -> bucket %s\n", $1, $2}'

echo
echo "More: build/tools/roundtable --help; docs/cli.md; docs/benchmarks.md."
