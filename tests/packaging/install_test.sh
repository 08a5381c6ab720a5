#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds the examples of
# docs/examples/ out of tree against it, as a user would: the C++ one with
# find_package, the C one with pkg-config (shared, then --static), the
# Python one with the installed module; then runs each, and the installed
# tools. Nothing is written by hand but the prefix.
#   install_test.sh BUILD_DIR SOURCE_DIR [PYTHON]
# PYTHON: the interpreter the module was built for (no Python example
# without it).
set -euo pipefail
build=$1
top=$2
python=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null

# The public headers include nothing but each other and Abseil.
for h in "$prefix"/include/roundtable/*.h; do
  if grep -E '^\s*#\s*include\s+"' "$h" | grep -vE '"(roundtable|absl)/[a-z_/]+\.h"'; then
    fail "$h includes a private header"
  fi
done
[ -f "$prefix/include/roundtable/version.h" ] || fail "no version.h"
version=$(sed -n 's/^#define ROUNDTABLE_VERSION_STRING "\(.*\)"/\1/p' \
          "$prefix/include/roundtable/version.h")
[ -n "$version" ] || fail "no version in version.h"

# C++: find_package(roundtable) and roundtable::roundtable, nothing else.
cmake -S "$top/docs/examples/cpp" -B "$tmp/cpp" \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/cpp" >/dev/null
out=$("$tmp/cpp/example" "$tmp/cpp_table")
grep -q "alice = 42, carol: not found" <<<"$out" || fail "C++ example: $out"
grep -q "2 records, roundtable $version" <<<"$out" || fail "C++ example: $out"
# (Each command's output is taken whole before grep -q reads it: grep
# stopping early must not fail the command under pipefail.)
libs=$(ldd "$tmp/cpp/example")
grep -q "libroundtable.so.${version%%.*} => $prefix/lib/" <<<"$libs" ||
  fail "the C++ example does not link the installed shared library"
# Again, reopening the table it made (its stored layout).
"$tmp/cpp/example" "$tmp/cpp_table" >/dev/null || fail "C++ example reopen"

# C: pkg-config, with the shared library and then the static one.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion roundtable)" = "$version" ] ||
  fail "pkg-config --modversion"
mkdir -p "$tmp/c"
make -s -C "$tmp/c" -f "$top/docs/examples/c/Makefile" \
  VPATH="$top/docs/examples/c" >/dev/null
out=$(LD_LIBRARY_PATH=$prefix/lib "$tmp/c/example" "$tmp/c_table")
grep -q "alice = 42" <<<"$out" || fail "C example: $out"
grep -q "carol: NOT_FOUND" <<<"$out" || fail "C example: $out"
mkdir -p "$tmp/c_static"
cc -std=c11 -o "$tmp/c_static/example" "$top/docs/examples/c/example.c" \
  $(pkg-config --cflags roundtable) \
  -Wl,-Bstatic -lroundtable -Wl,-Bdynamic \
  $(pkg-config --libs-only-L roundtable) \
  $(pkg-config --static --libs roundtable | sed 's/-lroundtable//') -lstdc++ -lm
libs=$(ldd "$tmp/c_static/example")
grep -q libroundtable <<<"$libs" &&
  fail "the static C example links the shared library"
out=$("$tmp/c_static/example" "$tmp/c_static_table")
grep -q "alice = 42" <<<"$out" || fail "static C example: $out"

# Python: the installed module, with the interpreter it was built for.
if [ -n "$python" ]; then
  package=$(find "$prefix" -name roundtable -path '*/dist-packages/*' -type d)
  [ -n "$package" ] || fail "no Python package installed"
  out=$(cd "$tmp" && PYTHONPATH=$(dirname "$package") "$python" \
        "$top/docs/examples/python/example.py" "$tmp/py_table")
  grep -q "alice = 42" <<<"$out" || fail "Python example: $out"
  grep -q "roundtable $version" <<<"$out" || fail "Python example: $out"
  grep -q "dbm: b.value." <<<"$out" || fail "Python example: $out"
fi

# The tools.
[ "$("$prefix/bin/roundtable" --version)" = "roundtable $version" ] ||
  fail "roundtable --version"
out=$("$prefix/bin/roundtable" stats "$tmp/cpp_table")
grep -q "^records  *2$" <<<"$out" ||
  fail "roundtable stats on the C++ example's table"
out=$("$prefix/bin/blockbench" --version)
grep -q "$version" <<<"$out" ||
  fail "blockbench --version"
echo "install_test: installed into a prefix; the examples built and ran"
