#!/usr/bin/env python3
"""Prints a TCP port free on 127.0.0.1 for a server to listen on, taken
below the kernel's ephemeral range (net.ipv4.ip_local_port_range), so that
no outgoing connection's local port takes it before the server binds it.
Used by tools/cluster.sh and tools/serve_bench.sh."""
import random
import socket

try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    ephemeral_low = 32768
low, high = 10000, max(10001, min(ephemeral_low, 65536))
for _ in range(1000):
    port = random.randrange(low, high)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
else:
    raise SystemExit("free_port: no free port between %d and %d" % (low, high))
