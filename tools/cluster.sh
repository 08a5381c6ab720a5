#!/usr/bin/env bash
# tools/cluster.sh [--redis-cluster] N [DIR] [PORT]: N `roundtable serve`
# nodes on loopback, each over its own table DIR/nodeI (DIR: build/cluster).
#
# By default behind twemproxy (Debian's nutcracker, ketama distribution):
# any Redis client then talks to the proxy at 127.0.0.1:PORT (22121,
# twemproxy's usual port, unless given; 0 picks a free one), and the nodes
# listen on ports the kernel picks.
#
# With --redis-cluster, the nodes speak the Redis Cluster protocol
# instead, on ports PORT, PORT+1, ... (7000 unless given; 0 picks free
# ones), with the 16384 slots cut into N equal ranges in DIR/topology;
# cluster-aware clients (redis-cli -c, redis-py's RedisCluster) start from
# any node.
#
# Prints the addresses, writes DIR/nodes (one line a node: name, address,
# pid), then runs until interrupted (SIGINT or SIGTERM), when it stops the
# proxy and closes every node cleanly. Extra `roundtable serve` flags:
# RT_SERVE_FLAGS. The binary: RT_CLI, or build/tools/roundtable.
# docs/server.md, "Sharding".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=twemproxy
if [ "${1:-}" = "--redis-cluster" ]; then
  mode=redis-cluster
  shift
fi
if [ $# -lt 1 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt 16384 ]; then
  echo "usage: tools/cluster.sh [--redis-cluster] N [DIR] [PORT]   (1 <= N <= 16384 nodes)" >&2
  exit 2
fi
n=$1
dir=${2:-$top/build/cluster}
if [ $mode = twemproxy ]; then port=${3:-22121}; else port=${3:-7000}; fi
rt=${RT_CLI:-$top/build/tools/roundtable}
command -v nutcracker >/dev/null || "$top/tools/setup.sh" nutcracker
[ -x "$rt" ] || "$top/tools/build.sh" build
mkdir -p "$dir"

free_port() { python3 "$top/tools/free_port.py"; }

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# Under --redis-cluster, the topology: node I serves slots
# [16384 I / N, 16384 (I + 1) / N).
cluster_flags=()
if [ $mode = redis-cluster ]; then
  : >"$dir/topology"
  for ((i = 0; i < n; i++)); do
    if [ "$port" = 0 ]; then p=$(free_port); else p=$((port + i)); fi
    echo "node$i 127.0.0.1:$p $((16384 * i / n))-$((16384 * (i + 1) / n - 1))" >>"$dir/topology"
  done
fi

# The nodes: each on its port, or one the kernel picks, read from its log.
: >"$dir/nodes"
servers=""
for ((i = 0; i < n; i++)); do
  node_port=0
  if [ $mode = redis-cluster ]; then
    node_port=$(awk -v name="node$i" '$1 == name { sub(/.*:/, "", $2); print $2 }' "$dir/topology")
    cluster_flags=(--cluster_topology="$dir/topology" --cluster_node="node$i")
  fi
  # The log exists before the wait below reads it (the background job
  # opens it only when it runs).
  : >"$dir/node$i.log"
  # shellcheck disable=SC2086
  "$rt" serve "$dir/node$i" --port="$node_port" "${cluster_flags[@]}" \
    ${RT_SERVE_FLAGS:-} 2>"$dir/node$i.log" &
  pids+=($!)
  address=""
  for ((wait = 0; wait < 600; wait++)); do
    address=$(sed -n 's/.*listening on \(.*\)$/\1/p' "$dir/node$i.log")
    [ -n "$address" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$address" ]; then
    echo "cluster: node$i did not start:" >&2
    cat "$dir/node$i.log" >&2
    exit 1
  fi
  echo "node$i $address ${pids[-1]}" >>"$dir/nodes"
  servers+="    - $address:1 node$i"$'\n'
done

# Says what runs ($1, then each node), then waits for every process.
serve_until_stopped() {
  echo "cluster: $1"
  while read -r name address pid; do
    echo "cluster: $name at $address (pid $pid, table $dir/$name)"
  done <"$dir/nodes"
  echo "cluster: ready"
  wait "${pids[@]}"
}

if [ $mode = redis-cluster ]; then
  serve_until_stopped "$n nodes speaking Redis Cluster (topology $dir/topology)"
  exit 0
fi

# The proxy: ketama over the nodes' names, keys hashed with MD5 (so that a
# key's node can be computed anywhere), {tags} hashed alone as in Redis
# Cluster; a node that fails is ejected at once and retried after 30 s.
[ "$port" = 0 ] && port=$(free_port)
cat >"$dir/nutcracker.yml" <<EOF
roundtable:
  listen: 127.0.0.1:$port
  redis: true
  hash: md5
  hash_tag: "{}"
  distribution: ketama
  auto_eject_hosts: true
  server_failure_limit: 1
  server_retry_timeout: 30000
  timeout: 10000
  preconnect: true
  servers:
$servers
EOF
nutcracker --test-conf -c "$dir/nutcracker.yml" >/dev/null 2>&1 || {
  nutcracker --test-conf -c "$dir/nutcracker.yml" >&2
  exit 1
}
nutcracker -c "$dir/nutcracker.yml" -s "$(free_port)" -a 127.0.0.1 \
  -o "$dir/nutcracker.log" &
pids+=($!)
for ((wait = 0; wait < 100; wait++)); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$dir/nutcracker.log" >&2; exit 1; }
  sleep 0.1
done
serve_until_stopped "$n nodes behind twemproxy (ketama) at 127.0.0.1:$port"
