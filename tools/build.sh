#!/usr/bin/env bash
# Configures and builds roundtable: tools/build.sh [DIR] [extra cmake args].
# DIR defaults to build/ (a Release build).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
cmake -S "$top" -B "$top/$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$top/$dir" -j "$(nproc)"
