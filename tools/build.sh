#!/usr/bin/env bash
# Configures and builds roundtable:
#   tools/build.sh [DIR] [cmake args] [-- cmake --build args]
# DIR defaults to build/ (a Release build); after "--", for instance
# "--target table_test", what to build (default: everything).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
configure=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do configure+=("$1"); shift; done
[ $# -gt 0 ] && shift
cmake -S "$top" -B "$top/$dir" -DCMAKE_BUILD_TYPE=Release "${configure[@]}" >/dev/null
cmake --build "$top/$dir" -j "$(nproc)" "$@"
