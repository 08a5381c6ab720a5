#!/usr/bin/env bash
# tools/check_layers.py: the source tree passes, and crafted trees that
# break each rule (a cycle, io/ including engine/, a part including the
# table's header, a public header including a private one) fail, naming
# the fault.
set -euo pipefail
top=$1
check="$top/tools/check_layers.py"
python3 "$check" "$top"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect_fault() {  # tree, text the fault names
  if out=$(python3 "$check" "$1"); then
    echo "passed a tree with: $2"; exit 1
  fi
  grep -q "$2" <<<"$out" || { echo "fault not named: $2 (got: $out)"; exit 1; }
}
mkdir -p "$tmp/cycle/engine/internal" "$tmp/cycle/io"
printf '#include "engine/internal/b.h"\n' >"$tmp/cycle/engine/internal/a.h"
printf '#include "engine/internal/c.h"\n' >"$tmp/cycle/engine/internal/b.cc"
printf '#include "engine/internal/a.h"\n' >"$tmp/cycle/engine/internal/c.h"
touch "$tmp/cycle/engine/internal/b.h"
expect_fault "$tmp/cycle" "cycle: engine/internal/a -> engine/internal/b -> engine/internal/c -> engine/internal/a"
mkdir -p "$tmp/up/engine/include/roundtable" "$tmp/up/io"
touch "$tmp/up/engine/include/roundtable/options.h"
printf '#include "roundtable/options.h"\n' >"$tmp/up/io/device.h"
expect_fault "$tmp/up" "io/ includes nothing of engine/"
mkdir -p "$tmp/facade/engine/internal" "$tmp/facade/engine/include/roundtable"
touch "$tmp/facade/engine/include/roundtable/table.h"
printf '#include "roundtable/table.h"\n' >"$tmp/facade/engine/internal/part.cc"
expect_fault "$tmp/facade" "the parts include roundtable/options.h"
mkdir -p "$tmp/leak/engine/internal" "$tmp/leak/engine/include/roundtable"
touch "$tmp/leak/engine/internal/part.h"
printf '#include "engine/internal/part.h"\n' \
  >"$tmp/leak/engine/include/roundtable/table.h"
expect_fault "$tmp/leak" "a public header includes only public headers"
echo "check_layers: the tree passes and every crafted fault is found"
