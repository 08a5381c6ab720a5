#!/usr/bin/env bash
# roundtable as a subproject (add_subdirectory, as FetchContent does): a
# consumer's project builds only the library (no test, benchmark or tool
# targets, no test framework looked for), keeps its own build type, and
# compiles and runs the C++ example against roundtable::roundtable.
#   subproject_test.sh SOURCE_DIR
set -euo pipefail
top=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "subproject_test: $*" >&2; exit 1; }
mkdir -p "$tmp/app"
cp "$top/docs/examples/cpp/main.cc" "$tmp/app/"
cat >"$tmp/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(app CXX)
add_subdirectory("$top" roundtable)
add_executable(example main.cc)
target_link_libraries(example roundtable::roundtable)
CMAKE
cmake -S "$tmp/app" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Debug >"$tmp/configure.log"
grep -q "^CMAKE_BUILD_TYPE:STRING=Debug$" "$tmp/build/CMakeCache.txt" ||
  fail "the consumer's build type changed"
for option in RT_BUILD_TESTS RT_BUILD_BENCH RT_BUILD_TOOLS RT_INSTALL; do
  grep -q "^$option:BOOL=OFF$" "$tmp/build/CMakeCache.txt" ||
    fail "$option is not OFF in a subproject"
done
grep -qE "^(GTest_DIR|GTEST_|benchmark_DIR)" "$tmp/build/CMakeCache.txt" &&
  fail "a test framework was looked for"
targets=$(cmake --build "$tmp/build" --target help)
for t in table_test kvbench roundtable blockbench; do
  grep -qE "^\.\.\. $t( |$)" <<<"$targets" && fail "target $t in the consumer's build"
done
cmake --build "$tmp/build" -j "$(nproc)" >"$tmp/build.log" ||
  { tail -30 "$tmp/build.log"; fail "build"; }
out=$("$tmp/build/example" "$tmp/table")
grep -q "alice = 42, carol: not found" <<<"$out" || fail "example: $out"
echo "subproject_test: only the library built; the example ran"
