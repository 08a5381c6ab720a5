#!/usr/bin/env bash
# tools/cluster.sh N [DIR] [PORT]: N `roundtable serve` nodes on loopback
# behind twemproxy (Debian's nutcracker, ketama distribution): any Redis
# client then talks to the proxy at 127.0.0.1:PORT (22121, twemproxy's
# usual port, unless given; 0 picks a free one). Each node's table is
# DIR/nodeI (DIR: build/cluster); the nodes listen on ports the kernel
# picks. Prints the proxy's address and the nodes', writes DIR/nodes (one
# line a node: name, address, pid) and DIR/nutcracker.yml, then runs until
# interrupted (SIGINT or SIGTERM), when it stops the proxy and closes every
# node cleanly. Extra `roundtable serve` flags: RT_SERVE_FLAGS. The binary:
# RT_CLI, or build/tools/roundtable. docs/server.md, "Sharding".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: tools/cluster.sh N [DIR] [PORT]   (N >= 1 nodes)" >&2
  exit 2
fi
n=$1
dir=${2:-$top/build/cluster}
port=${3:-22121}
rt=${RT_CLI:-$top/build/tools/roundtable}
command -v nutcracker >/dev/null || "$top/tools/setup.sh" nutcracker
[ -x "$rt" ] || "$top/tools/build.sh" build
mkdir -p "$dir"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# The nodes, each on a port of the kernel's choosing, read from its log.
: >"$dir/nodes"
servers=""
for ((i = 0; i < n; i++)); do
  # shellcheck disable=SC2086
  "$rt" serve "$dir/node$i" --port=0 ${RT_SERVE_FLAGS:-} 2>"$dir/node$i.log" &
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
echo "cluster: $n nodes behind twemproxy (ketama) at 127.0.0.1:$port"
while read -r name address pid; do
  echo "cluster: $name at $address (pid $pid, table $dir/$name)"
done <"$dir/nodes"
echo "cluster: ready"
wait "${pids[@]}"
