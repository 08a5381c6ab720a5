#!/usr/bin/env bash
# Quick start, step 2: install what is missing, build, and run the test suite
# with ctest.
#
#   tools/test.sh              the default suite (everything not labelled slow)
#   tools/test.sh --all        also the tests labelled slow
#   tools/test.sh --sanitize   also a Debug build with ASan+UBSan in
#                              build-sanitize/, running the same suite; a
#                              TSan build in build-tsan/ running the tests
#                              with concurrent threads; and the libFuzzer
#                              targets (clang, build-fuzz/: the table's
#                              files, the server's parser) for
#                              RT_FUZZ_SECONDS (default 60) seconds each
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

# The peers too, so that kvbench's tests run every adapter.
"$top/tools/setup.sh" --peers
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

  # ThreadSanitizer on the tests that run threads.
  "$top/tools/build.sh" build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRT_TSAN=ON -DRT_BUILD_BENCH=OFF -- --target table_test \
    table_power_loss_test table_write_ahead_test block_device_contract_test \
    deferred_device_test wait_test
  (cd "$top/build-tsan/tests" &&
   export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 &&
   ./table_test --gtest_filter='*Concurrent*:*BesideTheWriters*:*NextCheckpointsThread*:*GrowsFromEmptyAndShrinksBackToEmpty*' &&
   ./table_power_loss_test --gtest_filter='*Concurrent*' &&
   ./table_write_ahead_test &&
   ./block_device_contract_test &&
   ./deferred_device_test &&
   ./wait_test)

  # The fuzz target, for a bounded time (docs/testing.md: longer runs).
  "$top/tools/setup.sh" clang libclang-rt-dev
  CC=clang CXX=clang++ "$top/tools/build.sh" build-fuzz \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRT_FUZZ=ON -DRT_BUILD_BENCH=OFF \
    -- --target table_fuzz resp_fuzz
  # target max_len seconds: the table's files, then the server's parser.
  for run in "table_fuzz 256 ${RT_FUZZ_SECONDS:-60}" \
             "resp_fuzz 4096 ${RT_FUZZ_SECONDS:-60}"; do
    set -- $run
    mkdir -p "$top/build-fuzz/corpus-$1"
    echo "fuzzing with $1 for $3 s"
    if ! "$top/build-fuzz/tests/$1" -max_total_time="$3" -max_len="$2" \
        -print_final_stats=1 "$top/build-fuzz/corpus-$1" \
        >"$top/build-fuzz/$1.log" 2>&1; then
      tail -n 60 "$top/build-fuzz/$1.log"
      exit 1
    fi
    grep -E "^stat::number_of_executed_units|^Done" "$top/build-fuzz/$1.log"
  done
fi
