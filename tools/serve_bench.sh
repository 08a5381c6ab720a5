#!/usr/bin/env bash
# tools/serve_bench.sh [ROUNDS]: redis-benchmark against `roundtable serve`
# and against Debian's redis-server (appendonly yes, appendfsync everysec),
# in the same run, on the same keys, both on loopback ports of the kernel's
# choosing, each with its log synced once a second:
#
#   SET, GET, INCR, MSET (10 keys) at 50 clients, pipeline 1 and 16;
#   RT_BENCH_REQUESTS requests a line (200000), keys drawn from
#   RT_BENCH_KEYSPACE (1000000), values of RT_BENCH_VALUE bytes (100).
#
# ROUNDS rounds (3), the two servers' order swapped each round (each round
# starts both afresh); prints each line's median requests per second, the
# ratio, and each server's resident size after the round (the median), as
# a Markdown table. docs/benchmarks.md, "The server beside redis-server".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
requests=${RT_BENCH_REQUESTS:-200000}
keyspace=${RT_BENCH_KEYSPACE:-1000000}
value=${RT_BENCH_VALUE:-100}
"$top/tools/setup.sh" redis-server redis-tools
rt=${RT_CLI:-$top/build/tools/roundtable}
[ -x "$rt" ] || "$top/tools/build.sh" build
work=$(mktemp -d /tmp/serve_bench-XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 "$top/tools/free_port.py"; }

# Starts server $1 on a fresh directory; sets pid and port.
start() {
  rm -rf "${work:?}/$1"
  mkdir -p "$work/$1"
  port=$(free_port)
  case $1 in
    roundtable)
      "$rt" serve "$work/$1/table" --port="$port" --fsync=everysec \
        2>"$work/$1.log" &
      ;;
    redis)
      redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$1" \
        --appendonly yes --appendfsync everysec --save "" \
        --daemonize no --logfile "$work/$1.log" &
      ;;
  esac
  pid=$!
  for ((i = 0; i < 300; i++)); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "serve_bench: $1 did not start" >&2
  cat "$work/$1.log" >&2
  exit 1
}

stop() {
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
}

: >"$work/results.csv"
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2)); then order="roundtable redis"; else order="redis roundtable"; fi
  for server in $order; do
    start "$server"
    for pipeline in 1 16; do
      redis-benchmark -p "$port" -c 50 -P "$pipeline" -n "$requests" \
        -r "$keyspace" -d "$value" -t set,get,incr,mset --csv 2>/dev/null |
        awk -F'"' -v s="$server" -v p="$pipeline" \
          'NR > 1 && $2 != "" { print s "," $2 " P" p "," $4 }' \
        >>"$work/results.csv"
    done
    rss=$(awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$pid/status")
    echo "$server,resident bytes,$rss" >>"$work/results.csv"
    echo "serve_bench: round $round, $server done" >&2
    stop
  done
done

echo "redis-benchmark, 50 clients, $requests requests a line, $keyspace keys, $value-byte values; medians of $rounds rounds"
echo "($(date -u +%F), commit $(git -C "$top" rev-parse --short HEAD), $(nproc) CPUs, $(uname -r))"
echo
echo "| line | roundtable | redis-server | ratio |"
echo "|---|---:|---:|---:|"
awk -F, '
  { v[$1 "|" $2] = v[$1 "|" $2] " " $3; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
  function median(list,   a, k, i, j, t) {
    k = split(list, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    for (i = 0; i < n; i++) {
      r = median(v["roundtable|" order[i]]); d = median(v["redis|" order[i]])
      printf "| %s | %.0f | %.0f | %.2f |\n", order[i], r, d, (d > 0 ? r / d : 0)
    }
  }' "$work/results.csv"
