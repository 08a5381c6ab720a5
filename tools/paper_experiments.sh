#!/usr/bin/env bash
# Reproduces the round-hashing paper's stash and transfer experiments on the
# engine (docs/experiments.md):
#
#   tools/paper_experiments.sh [--quick] [OUT_DIR]     (default docs/figures)
#
# Writes OUT_DIR/stash_grid.csv and stash_grid.md (Tables 3-5: every B,
# epsilon and s0, n from 2^10 B to 2^13 B; about an hour on 2 cores),
# stash_trace.csv and stash_trace.png (Figure 3, B = 512 and 2048),
# transfers.csv and transfers.png, and the time each took in timings.txt.
# --quick runs the small presets instead (seconds), into a temporary
# directory unless OUT_DIR is given.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
quick=()
if [ "${1:-}" = "--quick" ]; then quick=(--quick); shift; fi
if [ ${#quick[@]} -gt 0 ]; then
  out=${1:-$(mktemp -d /tmp/roundtable-experiments-XXXXXX)}
else
  out=${1:-$top/docs/figures}
fi
mkdir -p "$out"
"$top/tools/setup.sh" gnuplot-nox
"$top/tools/build.sh" build -- --target roundtable >/dev/null
rt="$top/build/tools/roundtable"

source "$top/tools/timed.sh"

timed "stash grid" "$rt" experiment stash "${quick[@]}" \
  --csv="$out/stash_grid.csv" >"$out/stash_grid.md"
cat "$out/stash_grid.md"
trace_keys=(--block_keys=512,2048)
[ ${#quick[@]} -gt 0 ] && trace_keys=()
timed "stash trace" "$rt" experiment stash --trace "${quick[@]}" \
  "${trace_keys[@]}" --csv="$out/stash_trace.csv" \
  --plot="$out/stash_trace.png"
timed "transfers" "$rt" experiment transfers "${quick[@]}" \
  --csv="$out/transfers.csv" --plot="$out/transfers.png"
echo "results in $out"
