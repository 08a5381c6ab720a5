#!/usr/bin/env bash
# libroundtable.so exports the public API only: roundtable:: names other
# than internal ones (with their classes' type information) and the C
# API's rt_ functions; its SONAME carries the major version.
#   exported_symbols_test.sh LIBRARY VERSION_H
set -euo pipefail
lib=$1
major=$(sed -n 's/^#define ROUNDTABLE_VERSION_MAJOR \([0-9]*\)/\1/p' "$2")
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libroundtable.so.$major" ]; then
  echo "SONAME is '$soname', not libroundtable.so.$major"; exit 1
fi
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}' | c++filt)
bad=$(grep -vE '^(roundtable::|rt_[a-z0-9_]+@@|(typeinfo|typeinfo name|vtable) for roundtable::|ROUNDTABLE_[0-9]+$)' <<<"$symbols" || true)
internal=$(grep -E 'roundtable::(internal|io)::|Table::Impl::|mapping::(RoundMapping|JumpMapping|RoundState)' <<<"$symbols" || true)
if [ -n "$bad$internal" ]; then
  echo "exported but not public:"; printf '%s\n%s\n' "$bad" "$internal"; exit 1
fi
for want in 'roundtable::Table::Open(' 'roundtable::Table::Get(' \
            'roundtable::WriteBatch::Put(' 'roundtable::DestroyTable(' \
            'roundtable::mapping::MakePlacement(' 'rt_open@@' 'rt_get@@' \
            'rt_iterator_next@@'; do
  grep -qF "$want" <<<"$symbols" || { echo "not exported: $want"; exit 1; }
done
echo "exported_symbols_test: $(wc -l <<<"$symbols") symbols, all public; SONAME $soname"
