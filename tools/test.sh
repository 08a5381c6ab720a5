#!/usr/bin/env bash
# Quick start, step 2: install what is missing, build, and run the test suite
# with ctest.
#
#   tools/test.sh              the default suite (everything not labelled slow)
#   tools/test.sh --all        also the tests labelled slow
#   tools/test.sh --sanitize   also a Debug build with ASan+UBSan in
#                              build-sanitize/, running the same suite
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
all=0
sanitize=0
for arg in "$@"; do
  case "$arg" in
    --all) all=1 ;;
    --sanitize) sanitize=1 ;;
    *) echo "usage: tools/test.sh [--all] [--sanitize]" >&2; exit 2 ;;
  esac
done

"$top/tools/setup.sh"
ctest_args=(--output-on-failure -j "$(nproc)")
[ "$all" -eq 1 ] || ctest_args+=(-LE slow)

"$top/tools/build.sh" build
(cd "$top/build" && ctest "${ctest_args[@]}")

if [ "$sanitize" -eq 1 ]; then
  "$top/tools/build.sh" build-sanitize -DCMAKE_BUILD_TYPE=Debug \
    -DRT_SANITIZE=ON -DRT_BUILD_BENCH=OFF
  (cd "$top/build-sanitize" &&
   ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest "${ctest_args[@]}")
fi
