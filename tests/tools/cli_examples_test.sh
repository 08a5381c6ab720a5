#!/usr/bin/env bash
# Runs the ```sh block under "## Examples" in docs/cli.md as it is, in a
# scratch directory, with the built roundtable first on the PATH; every
# line must succeed (a line that expects a failure says so itself). Also
# checks that the block uses every store command of `roundtable --help`.
#   cli_examples_test.sh ROUNDTABLE_BINARY DOCS_CLI_MD
set -euo pipefail
binary=$(realpath "$1")
doc=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
ln -s "$binary" "$tmp/bin/roundtable"
awk '/^## Examples/ {in_section = 1} in_section && /^```sh$/ {on = 1; next}
     on && /^```$/ {exit} on {print}' "$doc" >"$tmp/examples.sh"
[ -s "$tmp/examples.sh" ] || { echo "no examples block in $doc"; exit 1; }
for command in $("$binary" --help | sed -n 's/^roundtable \([a-z]*\) .*/\1/p;s/^roundtable \([a-z]*\)$/\1/p' | sort -u); do
  grep -q "^roundtable $command\b" "$tmp/examples.sh" ||
    { echo "the examples never run 'roundtable $command'"; exit 1; }
done
cd "$tmp"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  [ -z "$line" ] && continue
  if ! PATH="$tmp/bin:$PATH" bash -e -o pipefail -c "$line" >"$tmp/out" 2>&1; then
    echo "example line $n failed: $line"
    cat "$tmp/out"
    exit 1
  fi
done <"$tmp/examples.sh"
echo "cli_examples_test: $n example lines ran"
