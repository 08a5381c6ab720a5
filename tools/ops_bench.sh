#!/usr/bin/env bash
# The operator commands on a table of N records (16-byte keys, 100-byte
# values; default 10^6), beside the peers' own tools on the same records:
#   backup   roundtable backup | mdb_copy | kchashmgr copy | cp (tkrzw: its
#            file is the database; the tool has no copy)
#   dump     roundtable dump | mdb_dump | kchashmgr dump | tkrzw_dbm_util export
#   restore  roundtable restore | mdb_load | kchashmgr load | tkrzw_dbm_util import
#   rebuild  roundtable rebuild | mdb_copy -c (a compacting copy) |
#            kchashmgr defrag | tkrzw_dbm_util rebuild
# Each store is loaded once per round (not timed); each command runs on a
# warm page cache; three rounds alternate the stores' order and the table
# gives the median seconds of each.
#   tools/ops_bench.sh [--records=N] [--rounds=R] [--dir=DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
records=1000000
rounds=3
dir=$(mktemp -d /tmp/ops_bench.XXXXXX)
for arg in "$@"; do
  case "$arg" in
    --records=*) records=${arg#*=} ;;
    --rounds=*) rounds=${arg#*=} ;;
    --dir=*) dir=${arg#*=} ;;
    *) echo "usage: tools/ops_bench.sh [--records=N] [--rounds=R] [--dir=DIR]" >&2; exit 2 ;;
  esac
done
"$top/tools/setup.sh" python3-lmdb lmdb-utils kyotocabinet-utils tkrzw-utils
[ -x "$top/build/tools/roundtable" ] || "$top/tools/build.sh" build -- --target roundtable
rt="$top/build/tools/roundtable"
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
tsv=$dir/records.tsv
python3 - "$records" "$tsv" <<'EOF'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(1)
with open(path, "w") as f:
    for i in range(n):
        f.write("%016x\t%s\n" % (rng.getrandbits(64), "v" * 100))
EOF

# seconds CMD...: runs CMD (its output to the store's log) and prints its
# wall time; a command that fails stops the run.
seconds() {
  local start end
  start=$(date +%s.%N)
  if ! "$@" >>"$dir/command.log" 2>&1; then
    echo "failed: $*" >&2
    tail -5 "$dir/command.log" >&2
    kill -TERM $$
  fi
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

results=$dir/results.txt
: >"$results"
record() { echo "$1 $2 $3" >>"$results"; }  # store command seconds

run_roundtable() {
  local d=$dir/rt
  rm -rf "$d" "$d".*
  "$rt" create "$d" --s0=4 && "$rt" load "$d" "$tsv" --batch=1000
  record roundtable backup "$(seconds "$rt" backup "$d" "$d.backup")"
  record roundtable dump "$(seconds "$rt" dump "$d" "$d.dump")"
  record roundtable restore "$(seconds "$rt" restore "$d.dump" "$d.restored")"
  record roundtable rebuild "$(seconds "$rt" rebuild "$d" --block_size=8192)"
  rm -rf "$d" "$d".*
}

run_lmdb() {
  local d=$dir/lmdb
  rm -rf "$d" "$d".*
  mkdir -p "$d" "$d.backup" "$d.compact" "$d.restored"
  /usr/bin/python3 - "$d" "$tsv" <<'EOF'
import lmdb, sys
env = lmdb.open(sys.argv[1], map_size=4 << 30)
with env.begin(write=True) as txn, open(sys.argv[2], "rb") as f:
    for line in f:
        k, v = line.rstrip(b"\n").split(b"\t")
        txn.put(k, v)
env.close()
EOF
  record lmdb backup "$(seconds mdb_copy "$d" "$d.backup")"
  record lmdb dump "$(seconds mdb_dump -f "$d.dump" "$d")"
  record lmdb restore "$(seconds mdb_load -f "$d.dump" "$d.restored")"
  record lmdb rebuild "$(seconds mdb_copy -c "$d" "$d.compact")"
  rm -rf "$d" "$d".*
}

run_kyotocabinet() {
  local d=$dir/kc.kch
  rm -f "$d" "$d".*
  kchashmgr create -bnum $((records * 2)) "$d"
  kchashmgr import "$d" "$tsv"
  record kyotocabinet backup "$(seconds kchashmgr copy "$d" "$d.backup")"
  record kyotocabinet dump "$(seconds kchashmgr dump "$d" "$d.dump")"
  record kyotocabinet restore "$(seconds kchashmgr load "$d.restored" "$d.dump")"
  record kyotocabinet rebuild "$(seconds kchashmgr defrag "$d")"
  rm -f "$d" "$d".*
}

run_tkrzw() {
  local d=$dir/tkrzw.tkh
  rm -f "$d" "$d".*
  tkrzw_dbm_util create --dbm hash --buckets $((records * 2)) "$d"
  tkrzw_dbm_util import --dbm hash --tsv "$d" "$tsv"
  record tkrzw backup "$(seconds cp "$d" "$d.backup")"
  record tkrzw dump "$(seconds tkrzw_dbm_util export --dbm hash "$d" "$d.dump")"
  record tkrzw restore "$(seconds tkrzw_dbm_util import --dbm hash "$d.restored.tkh" "$d.dump")"
  record tkrzw rebuild "$(seconds tkrzw_dbm_util rebuild --dbm hash "$d")"
  rm -f "$d" "$d".*
}

stores=(roundtable lmdb kyotocabinet tkrzw)
for ((r = 0; r < rounds; r++)); do
  order=("${stores[@]}")
  if ((r % 2 == 1)); then
    order=(); for ((i = ${#stores[@]} - 1; i >= 0; i--)); do order+=("${stores[i]}"); done
  fi
  for s in "${order[@]}"; do
    echo "round $((r + 1)): $s" >&2
    "run_$s" >>"$dir/command.log" 2>&1
  done
done

echo "$records records of 16-byte keys and 100-byte values; median seconds of $rounds rounds"
echo "| store | backup | dump | restore | rebuild |"
echo "|---|---|---|---|---|"
for s in "${stores[@]}"; do
  row="| $s"
  for c in backup dump restore rebuild; do
    m=$(awk -v s="$s" -v c="$c" '$1 == s && $2 == c {print $3}' "$results" |
        sort -g | awk '{a[NR] = $1} END {if (NR) printf "%.2f", a[int((NR + 1) / 2)]}')
    row="$row | ${m:--}"
  done
  echo "$row |"
done
