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
# Then a data set larger than a memory budget of RT_BENCH_BUDGET_MB MiB
# (128): RT_BENCH_LARGE_KEYS keys (2000000) of RT_BENCH_LARGE_VALUE bytes
# (256), loaded by `redis-cli --pipe`, then GET at pipeline 1 and 16 and
# SET at 16 over them. roundtable gets the budget as its cache (three
# quarters) and write buffer (a quarter); redis-server, which keeps its
# data in memory, runs without a limit, and once more with the budget as
# its maxmemory (noeviction, its default policy: writes past it are
# refused) to count the keys it keeps.
#
# RT_BENCH_SERVE_FLAGS adds flags to every `roundtable serve` (say
# --event_loops=2).
#
# ROUNDS rounds (3). Each round starts both servers afresh and runs them
# side by side, each line against one and then the other (the order
# swapped each round); prints each line's median requests per second and
# the server's CPU time a request (all its threads, from /proc), the
# ratios, and each server's resident size after the round (the median),
# as a Markdown table. docs/benchmarks.md, "The server beside
# redis-server".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
requests=${RT_BENCH_REQUESTS:-200000}
keyspace=${RT_BENCH_KEYSPACE:-1000000}
value=${RT_BENCH_VALUE:-100}
budget_mb=${RT_BENCH_BUDGET_MB:-128}
large_keys=${RT_BENCH_LARGE_KEYS:-2000000}
large_value=${RT_BENCH_LARGE_VALUE:-256}
"$top/tools/setup.sh" redis-server redis-tools
rt=${RT_CLI:-$top/build/tools/roundtable}
[ -x "$rt" ] || "$top/tools/build.sh" build
work=$(mktemp -d /tmp/serve_bench-XXXXXX)
declare -A pids ports
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 "$top/tools/free_port.py"; }

# Starts server $1 on a fresh directory, with flags $2...; records its
# pid and port in pids[$1] and ports[$1].
start() {
  local server=$1 port
  shift
  rm -rf "${work:?}/$server"
  mkdir -p "$work/$server"
  port=$(free_port)
  case $server in
    roundtable)
      # shellcheck disable=SC2086 # RT_BENCH_SERVE_FLAGS: words to split
      "$rt" serve "$work/$server/table" --port="$port" --fsync=everysec \
        ${RT_BENCH_SERVE_FLAGS:-} "$@" 2>"$work/$server.log" &
      ;;
    redis)
      redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$server" \
        --appendonly yes --appendfsync everysec --save "" \
        --daemonize no --logfile "$work/$server.log" "$@" &
      ;;
  esac
  pids[$server]=$!
  ports[$server]=$port
  for ((i = 0; i < 300; i++)); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "serve_bench: $server did not start" >&2
  cat "$work/$server.log" >&2
  exit 1
}

stop() {
  local server
  for server in "${!pids[@]}"; do
    kill "${pids[$server]}"
    wait "${pids[$server]}" 2>/dev/null || true
  done
  pids=()
}

resident() { awk '/^VmRSS/ { print $2 * 1024 }' "/proc/${pids[$1]}/status"; }

# The CPU time server $1 has used so far, all its threads, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/${pids[$1]}/stat"; }

# The 512-byte sectors read so far from the disk that holds the servers'
# files (every process's reads: the benchmark's are the only others); 0
# where the files lie on no block device of its own (tmpfs, btrfs), whose
# lines then have no disk row.
disk=/sys/dev/block/$(findmnt -no MAJ:MIN -T "$work" | tr -d ' ')/stat
[[ -r $disk ]] || disk=
sectors_read() { if [[ -n $disk ]]; then awk '{ print $3 }' "$disk"; else echo 0; fi; }

# One redis-benchmark line of $requests requests, -t $2 at pipeline $1
# (the other flags follow), against each server of $order in turn;
# appends the rows
# "server,line Pn,requests a second", "server,line Pn CPU us,the server's
# CPU time a request in microseconds" and, for the large data set,
# "server,line Pn disk bytes,the bytes read from the disk a request".
bench() {
  local pipeline=$1 tests=$2 server before sectors line
  shift 2
  for server in $order; do
    before=$(cpu_ticks "$server")
    sectors=$(sectors_read)
    line=$(redis-benchmark -p "${ports[$server]}" -c 50 -P "$pipeline" \
      -t "$tests" -n "$requests" --csv "$@" 2>/dev/null |
      awk -F'"' 'NR > 1 && $2 != "" { print $2 "," $4 }')
    awk -F, -v s="$server" -v p="$pipeline" -v pre="${prefix:-}" \
      -v ticks=$(($(cpu_ticks "$server") - before)) -v hz="$hz" -v n="$requests" \
      -v sectors=$(($(sectors_read) - sectors)) -v disk="$disk" '{
        print s "," pre $1 " P" p "," $2
        printf "%s,%s%s P%s CPU us,%.2f\n", s, pre, $1, p, ticks * 1e6 / hz / n
        if (pre != "" && disk != "") printf "%s,%s%s P%s disk bytes,%.0f\n", s, pre, $1, p, sectors * 512 / n
      }' <<<"$line" >>"$work/results.csv"
  done
}

# The large data set in SET requests (keys as redis-benchmark names them,
# key:000000000000 on), made once.
large_requests() {
  python3 - "$large_keys" "$large_value" <<'EOF'
import sys
n, size = int(sys.argv[1]), int(sys.argv[2])
value, out, chunk = b"v" * size, sys.stdout.buffer, []
for i in range(n):
    chunk.append(b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n"
                 % (i, size, value))
    if len(chunk) == 10000:
        out.write(b"".join(chunk))
        chunk.clear()
out.write(b"".join(chunk))
EOF
}

# Loads the large data set into server $1; prints keys a second.
load_large() {
  local t0 t1
  t0=$(date +%s.%N)
  redis-cli -p "${ports[$1]}" --pipe <"$work/large.resp" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  awk -v n="$large_keys" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }'
}

hz=$(getconf CLK_TCK)
: >"$work/results.csv"
large_requests >"$work/large.resp"
large="large "
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2)); then order="roundtable redis"; else order="redis roundtable"; fi
  # Both servers run at once, and each line goes to one and then the
  # other, so that a change in the machine's pace falls on both.
  start roundtable
  start redis
  for pipeline in 1 16; do
    for tests in set get incr mset; do
      bench "$pipeline" "$tests" -r "$keyspace" -d "$value"
    done
  done
  for server in $order; do
    echo "$server,resident bytes,$(resident "$server")" >>"$work/results.csv"
  done
  stop
  start roundtable --cache_mb=$((budget_mb * 3 / 4)) \
    --write_buffer_mb=$((budget_mb / 4))
  start redis
  for server in $order; do
    echo "$server,${large}load (keys a second),$(load_large "$server")" \
      >>"$work/results.csv"
  done
  prefix=$large bench 1 get -r "$large_keys"
  for tests in get set; do
    prefix=$large bench 16 "$tests" -r "$large_keys" \
      -d "$large_value"
  done
  for server in $order; do
    kept=$(redis-cli -p "${ports[$server]}" dbsize)
    echo "$server,${large}keys kept,$kept"
    # roundtable's budget is the one above.
    [ "$server" = roundtable ] &&
      echo "$server,${large}keys kept within the budget,$kept"
    echo "$server,${large}resident bytes,$(resident "$server")"
  done >>"$work/results.csv"
  stop
  # redis-server within the budget: how much of the data set it keeps.
  start redis --maxmemory "${budget_mb}mb" --maxmemory-policy noeviction
  load_large redis >/dev/null
  echo "redis,${large}keys kept within the budget,$(redis-cli -p "${ports[redis]}" dbsize)" \
    >>"$work/results.csv"
  stop
  echo "serve_bench: round $round done" >&2
done

echo "redis-benchmark, 50 clients, $requests requests a line, $keyspace keys, $value-byte values; medians of $rounds rounds"
[ -n "${RT_BENCH_SERVE_FLAGS:-}" ] && echo "roundtable serve $RT_BENCH_SERVE_FLAGS"
echo "large: $large_keys keys of $large_value bytes, a budget of $budget_mb MiB (roundtable: cache and write buffer; redis-server: none, and maxmemory for the keys kept within it)"
echo "($(date -u +%F), commit $(git -C "$top" rev-parse --short HEAD), $(nproc) CPUs, $(uname -r))"
echo
echo "(CPU us: the server's CPU time a request, lower is better)"
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
      f = order[i] ~ / CPU us$/ ? "%.2f" : "%.0f"
      printf "| %s | " f " | " f " | %s |\n", order[i], r, d, (d > 0 ? sprintf("%.2f", r / d) : "-")
    }
  }' "$work/results.csv"
