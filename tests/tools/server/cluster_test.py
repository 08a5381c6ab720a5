"""tools/cluster.sh: roundtable serve nodes behind twemproxy (Debian's
nutcracker, ketama), and speaking the Redis Cluster protocol. Keys written through the proxy land on exactly the
node that ketama's ring (computed here from its definition: 160 MD5 points
a node, "name-i" hashed, the key's MD5) names, hash tags included; every
key reads back; a stopped node is ejected while the others keep serving,
and its keys then land where the ring of the remaining nodes says. As a
Redis Cluster, redis-py's RedisCluster, redis-cli -c and redis-benchmark
--cluster work unchanged, and each key is on the node serving its slot
(CRC16, computed here). The
script is $RT_CLUSTER, the server $RT_CLI; everything listens on
loopback ports the kernel picks and is stopped at the end."""
import bisect
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import redis
from redis.cluster import RedisCluster

CLUSTER = os.environ["RT_CLUSTER"]


def ketama_point(data, alignment=0):
    digest = hashlib.md5(data).digest()
    return int.from_bytes(digest[4 * alignment:4 * alignment + 4], "little")


class Ring:
    """twemproxy's ketama continuum over equally weighted nodes."""

    def __init__(self, names):
        points = []
        for name in names:
            for i in range(40):
                host = b"%s-%d" % (name.encode(), i)
                points.extend((ketama_point(host, a), name) for a in range(4))
        points.sort()
        self.values = [v for v, _ in points]
        self.names = [n for _, n in points]

    def node_of(self, key):
        start = key.find(b"{")
        if start >= 0:
            end = key.find(b"}", start + 1)
            if end > start + 1:
                key = key[start + 1:end]
        i = bisect.bisect_left(self.values, ketama_point(key))
        return self.names[i % len(self.names)]


def crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def key_slot(key):
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % 16384


class ClusterBase(unittest.TestCase):
    """Starts tools/cluster.sh MODE 3 and reads the nodes it started."""
    MODE = []

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rt_cluster_")
        self.proc = subprocess.Popen(
            [CLUSTER, *self.MODE, "3", self.dir, "0"], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output = []
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if line.startswith("cluster: ready"):
                break
        else:
            self.fail("cluster did not start")
        self.assertEqual(self.output[-1:], ["cluster: ready\n"],
                         "".join(self.output))
        if not self.MODE:
            self.proxy_port = int(self.output[0].rsplit(":", 1)[1])
        self.nodes = {}
        with open(os.path.join(self.dir, "nodes")) as f:
            for line in f:
                name, address, pid = line.split()
                self.nodes[name] = (int(address.rsplit(":", 1)[1]), int(pid))

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.dir)

    def node(self, name):
        return redis.Redis(port=self.nodes[name][0], socket_timeout=30)

    def holders(self, key):
        return [n for n in sorted(self.nodes)
                if self.nodes[n][1] and self.node(n).exists(key)]


class TwemproxyTest(ClusterBase):
    def test_keys_land_on_their_ring_node_and_survive_an_ejection(self):
        proxy = redis.Redis(port=self.proxy_port, socket_timeout=30)
        ring = Ring(sorted(self.nodes))
        keys = [b"key:%d" % i for i in range(1500)]
        keys += [bytes([i % 256, 0, 255, i // 256]) + b"\r\n" for i in range(500)]
        keys += [b"{user%d}:name" % i for i in range(50)]
        keys += [b"{user%d}:mail" % i for i in range(50)]
        pipe = proxy.pipeline(transaction=False)
        for k in keys:
            pipe.set(k, b"value of " + k)
        self.assertTrue(all(pipe.execute()))
        # Each key on exactly its ring node, and back through the proxy.
        placed = {}
        for k in keys:
            want = ring.node_of(k)
            self.assertEqual(self.holders(k), [want], k)
            placed[k] = want
        for i in range(50):
            self.assertEqual(placed[b"{user%d}:name" % i],
                             placed[b"{user%d}:mail" % i])
        self.assertEqual(proxy.mget(keys), [b"value of " + k for k in keys])
        # Every node holds some.
        self.assertEqual(set(placed.values()), set(self.nodes))

        # Stop node1: the proxy ejects it; the others' keys stay readable.
        port, pid = self.nodes["node1"]
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                redis.Redis(port=port, socket_timeout=1).ping()
                time.sleep(0.1)
            except redis.ConnectionError:
                break
        self.nodes["node1"] = (port, 0)
        for k in keys:
            if placed[k] != "node1":
                self.assertEqual(proxy.get(k), b"value of " + k, k)
        # node1's keys: written again once the proxy has ejected it, they
        # land where the ring without node1 says.
        lost = [k for k in keys if placed[k] == "node1"]
        self.assertGreater(len(lost), 100)
        deadline = time.time() + 20
        while True:
            try:
                proxy.set(lost[0], b"again")
                break
            except redis.ResponseError:
                self.assertLess(time.time(), deadline, "node1 not ejected")
                time.sleep(0.1)
        survivors = Ring(sorted(n for n in self.nodes if n != "node1"))
        for k in lost:
            self.assertTrue(proxy.set(k, b"again"))
        for k in lost:
            self.assertEqual(self.holders(k), [survivors.node_of(k)], k)
            self.assertEqual(proxy.get(k), b"again")

        # The script stops the proxy and closes each node cleanly.
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(timeout=120), 0)
        for name in self.nodes:
            with open(os.path.join(self.dir, name + ".log")) as f:
                self.assertIn("table closed", f.read(), name)


class RedisClusterTest(ClusterBase):
    MODE = ["--redis-cluster"]

    def test_keys_land_on_their_slots_node_through_every_client(self):
        # The topology: three equal slot ranges.
        owner = {}
        with open(os.path.join(self.dir, "topology")) as f:
            for line in f:
                name, _, slots = line.split()
                first, last = map(int, slots.split("-"))
                for slot in range(first, last + 1):
                    owner[slot] = name
        self.assertEqual(len(owner), 16384)
        start_port = self.nodes["node1"][0]
        rc = RedisCluster(host="127.0.0.1", port=start_port,
                          socket_timeout=30)
        keys = [b"key:%d" % i for i in range(1500)]
        keys += [bytes([i % 256, 0, 255, i // 256]) + b"\r\n" for i in range(500)]
        keys += [b"{user%d}:%s" % (i, f) for i in range(50)
                 for f in (b"name", b"mail")]
        pipe = rc.pipeline()
        for k in keys:
            pipe.set(k, b"value of " + k)
        self.assertTrue(all(pipe.execute()))
        for i in range(50):
            # One slot: a multi-key command on a tagged pair runs.
            self.assertEqual(rc.mget(b"{user%d}:name" % i, b"{user%d}:mail" % i),
                             [b"value of {user%d}:name" % i,
                              b"value of {user%d}:mail" % i])
        # Each key on exactly its slot's node (KEYS runs on the node asked).
        held = {n: set(self.node(n).keys("*")) for n in self.nodes}
        for k in keys:
            want = owner[key_slot(k)]
            self.assertEqual([n for n in sorted(held) if k in held[n]], [want], k)
        self.assertEqual(sum(len(h) for h in held.values()), len(keys))
        self.assertEqual(set(rc.scan_iter(count=100)), set(keys))
        # A node asked for another's key redirects; redis-cli -c follows.
        node0 = self.node("node0")
        foreign = next(k for k in keys
                       if owner[key_slot(k)] != "node0" and b"key:" in k)
        with self.assertRaises(redis.ResponseError) as moved:
            self.node("node0").get(foreign)
        self.assertIn("MOVED %d" % key_slot(foreign), str(moved.exception))
        cli = ["redis-cli", "-c", "-p", str(self.nodes["node0"][0])]
        out = subprocess.run(cli + ["GET", foreign.decode()],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.stdout.strip(), "value of " + foreign.decode())
        out = subprocess.run(cli + ["CLUSTER", "KEYSLOT", "somekey"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.stdout.strip(), "11058")
        # redis-benchmark --cluster reads CLUSTER NODES and spreads its keys.
        before = sum(self.node(n).dbsize() for n in self.nodes)
        out = subprocess.run(
            ["redis-benchmark", "-p", str(start_port), "--cluster", "-t",
             "set", "-n", "3000", "-r", "100000", "-c", "6", "-q"],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("SET:", out.stdout)
        self.assertNotIn("Error", out.stdout + out.stderr)
        counts = [self.node(n).dbsize() for n in self.nodes]
        self.assertGreater(sum(counts), before)
        for n in self.nodes:
            self.assertTrue(self.node(n).info("cluster")["cluster_enabled"])


class ClusterScriptTest(unittest.TestCase):
    def test_a_bad_node_count_is_refused(self):
        out = subprocess.run([CLUSTER, "0"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertIn("usage", out.stderr)


if __name__ == "__main__":
    unittest.main()
