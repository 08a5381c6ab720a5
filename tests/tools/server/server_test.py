"""roundtable serve driven by real Redis clients: redis-cli (Debian's
redis-tools) for the commands, their errors and RESP3, and redis-py
(python3-redis) for pipelines, many connections and binary data; raw
sockets for malformed input and the limits; SIGKILL and SIGTERM with each
--fsync mode. The server's binary is $RT_CLI; every server listens on a
loopback port the kernel picks and is stopped at the end."""
import json
import os
import random
import signal
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import redis

CLI = os.environ["RT_CLI"]


class Server:
    """A `roundtable serve` process on a port of the kernel's choosing."""

    def __init__(self, path, *flags):
        self.proc = subprocess.Popen(
            [CLI, "serve", path, "--port=0", *flags],
            stderr=subprocess.PIPE, text=True)
        self.lines = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            if "listening on" in line:
                self.port = int(line.rsplit(":", 1)[1])
                return
        self.proc.kill()
        raise RuntimeError("server did not start: " + "".join(self.lines))

    def client(self, **kwargs):
        return redis.Redis(port=self.port, socket_timeout=30, **kwargs)

    def cli(self, *args, resp3=False, stdin=None):
        command = ["redis-cli", "-p", str(self.port)]
        if resp3:
            command.append("-3")
        out = subprocess.run(command + [str(a) for a in args], input=stdin,
                             capture_output=True, text=True, timeout=60)
        return out.stdout.rstrip("\n")

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rest = self.proc.stderr.read()
        self.proc.wait(timeout=120)
        self.proc.stderr.close()
        return "".join(self.lines) + rest


class ServerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rt_serve_")
        self.path = os.path.join(self.dir, "t")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.stop(signal.SIGKILL)
        shutil.rmtree(self.dir)

    def start(self, *flags):
        s = Server(self.path, *flags)
        self.servers.append(s)
        return s

    def test_redis_cli_runs_every_command(self):
        s = self.start()
        cases = [
            (["PING"], "PONG"),
            (["ECHO", "hi there"], "hi there"),
            (["SET", "k", "v"], "OK"),
            (["SET", "k", "w", "NX"], ""),
            (["SET", "k", "w", "XX", "GET"], "v"),
            (["GET", "k"], "w"),
            (["SETNX", "k", "x"], "0"),
            (["GETSET", "k", "x"], "w"),
            (["APPEND", "k", "yz"], "3"),
            (["STRLEN", "k"], "3"),
            (["GETRANGE", "k", "0", "-2"], "xy"),
            (["SETRANGE", "k", "1", "AB"], "3"),
            (["GETDEL", "k"], "xAB"),
            (["MSET", "a", "1", "b", "2"], "OK"),
            (["MSETNX", "a", "1", "c", "3"], "0"),
            (["MGET", "a", "b", "c"], "1\n2"),
            (["INCR", "a"], "2"),
            (["INCRBY", "a", "10"], "12"),
            (["DECR", "a"], "11"),
            (["DECRBY", "a", "20"], "-9"),
            (["INCRBYFLOAT", "a", "0.5"], "-8.5"),
            (["EXISTS", "a", "b", "c"], "2"),
            (["TYPE", "a"], "string"),
            (["TTL", "a"], "-1"),
            (["TTL", "c"], "-2"),
            (["DBSIZE"], "2"),
            (["DEL", "a", "c"], "1"),
            (["UNLINK", "b"], "1"),
            (["DBSIZE"], "0"),
            (["SELECT", "0"], "OK"),
            (["CLIENT", "SETNAME", "me"], "OK"),
            (["CONFIG", "GET", "appendonly"], "appendonly\nyes"),
            (["FLUSHDB"], "OK"),
            (["RANDOMKEY"], ""),
        ]
        for args, want in cases:
            self.assertEqual(s.cli(*args), want, args)
        # Errors, as redis-cli prints them.
        errors = [
            (["GET"], "ERR wrong number of arguments for 'get' command"),
            (["NOSUCH", "x"],
             "ERR unknown command 'NOSUCH', with args beginning with: 'x' "),
            (["SET", "k", "v", "EX", "5"], "ERR expiry is not supported"),
            (["SET", "n", "x"], "OK"),
            (["INCR", "n"], "ERR value is not an integer or out of range"),
            (["SELECT", "3"], "ERR DB index is out of range"),
            (["AUTH", "x"], "ERR AUTH <password> called without any password"),
        ]
        for args, want in errors:
            self.assertTrue(s.cli(*args).startswith(want), (args, s.cli(*args)))
        keys = set(s.cli("MSET", "x1", "1", "x2", "2", "y", "3") and
                   s.cli("KEYS", "x*").split("\n"))
        self.assertEqual(keys, {"x1", "x2"})
        info = s.cli("INFO")
        self.assertIn("redis_version:", info)
        self.assertEqual(s.cli("DBSIZE"), "4")
        # The keyspace's count is the stored records plus the puts waiting
        # in the write buffer, less the deletes waiting (an estimate).
        fields = dict(line.split(":", 1) for line in info.splitlines()
                      if ":" in line)
        records, buffered, deletes = (
            int(fields[f]) for f in
            ("records", "buffered_records", "buffered_deletes"))
        self.assertIn("db0:keys=%d," % (records + buffered - 2 * deletes),
                      info)
        self.assertIn("# Table", info)

    def test_scan_returns_every_stable_key_while_the_table_grows_and_shrinks(self):
        s = self.start()
        c = s.client()
        stable = {b"stable:%d" % i for i in range(3000)}
        c.mset({k: b"v" for k in stable})
        # redis-cli's own SCAN loop, with a pattern.
        listed = s.cli("--scan", "--pattern", "stable:1*").split("\n")
        self.assertEqual(sorted(listed),
                         sorted(k.decode() for k in stable
                                if k.startswith(b"stable:1")))
        # A SCAN by hand, with a second connection growing the table by
        # thousands of keys and then deleting them between its steps.
        writer = s.client()
        buckets_before = int(s.cli("INFO", "table").split("buckets:")[1]
                             .split()[0])
        most = buckets_before
        seen = []
        churn = []
        cursor, step = 0, 0
        while True:
            cursor, keys = c.scan(cursor=cursor, count=20)
            seen.extend(keys)
            if cursor == 0:
                break
            step += 1
            pipe = writer.pipeline(transaction=False)
            if (step // 10) % 2 == 0:
                for i in range(400):
                    churn.append(b"churn:%d:%d" % (step, i))
                    pipe.set(churn[-1], b"x" * 40)
            else:
                for _ in range(min(400, len(churn))):
                    pipe.delete(churn.pop(random.randrange(len(churn))))
            pipe.execute()
            if step % 10 == 9:
                most = max(most, int(s.cli("INFO", "table")
                                     .split("buckets:")[1].split()[0]))
            self.assertLess(step, 100000)
        stable_seen = [k for k in seen if k.startswith(b"stable:")]
        self.assertEqual(len(stable_seen), len(stable))
        self.assertEqual(set(stable_seen), stable)
        # The table grew by more than half during the scan.
        self.assertGreater(most, buckets_before * 3 // 2)

    def test_resp3_through_hello(self):
        s = self.start()
        self.assertEqual(s.cli("GET", "none", resp3=True), "")
        self.assertEqual(s.cli("HELLO", "4"),
                         "NOPROTO unsupported protocol version")
        hello = s.cli("HELLO", "3", resp3=True)
        self.assertIn("proto 3", hello)
        raw = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        raw.sendall(b"HELLO 3\r\nGET none\r\nCONFIG GET appendfsync\r\n")
        data = b""
        while not data.endswith(b"$8\r\neverysec\r\n"):
            chunk = raw.recv(65536)
            self.assertTrue(chunk)
            data += chunk
        self.assertTrue(data.startswith(b"%7\r\n"))
        self.assertIn(b"\r\n_\r\n%1\r\n$11\r\nappendfsync\r\n", data)
        raw.close()

    def test_pipelines_connections_and_binary_data(self):
        s = self.start()
        r = s.client()
        rng = random.Random(3)
        model = {}
        pipe = r.pipeline(transaction=False)
        for i in range(2000):
            key = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
            value = bytes(rng.randrange(256)
                          for _ in range(rng.choice([0, 10, 100, 3000, 70000])))
            pipe.set(key, value)
            model[key] = value
        self.assertTrue(all(pipe.execute()))
        pipe = r.pipeline(transaction=False)
        for key in model:
            pipe.get(key)
        self.assertEqual(pipe.execute(), list(model.values()))
        self.assertEqual(r.dbsize(), len(model))
        # Transactions are refused, as docs/server.md says.
        with self.assertRaises(redis.ResponseError):
            tx = r.pipeline(transaction=True)
            tx.set("t", "1")
            tx.execute()
        # Many connections at once, each incrementing its own and a shared
        # counter: the shared one sees every increment.
        errors = []

        def worker(n):
            try:
                c = s.client()
                for _ in range(50):
                    c.incr("shared")
                    c.incr(f"own{n}")
                c.close()
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(n,))
                   for n in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        self.assertEqual(errors, [])
        self.assertEqual(int(r.get("shared")), 200 * 50)
        self.assertEqual({int(r.get(f"own{n}")) for n in range(200)}, {50})

    def test_several_event_loops_share_the_clients_and_keep_writes_atomic(self):
        s = self.start("--event_loops=4")
        r = s.client()
        self.assertIn("event_loops:4", s.cli("INFO", "server"))
        self.assertEqual(s.cli("CONFIG", "GET", "io-threads"), "io-threads\n4")
        # Clients spread over the loops: every one listed, whichever loop
        # serves it.
        held = [s.client() for _ in range(12)]
        for i, c in enumerate(held):
            c.client_setname(f"held{i}")
        names = {c["name"] for c in r.client_list()}
        self.assertTrue({f"held{i}" for i in range(12)} <= names)
        # Read-modify-writes from many connections at once stay atomic, and
        # an MGET never sees half of an MSET.
        errors = []
        stop = threading.Event()

        def incr(n):
            try:
                c = s.client()
                for _ in range(20):
                    pipe = c.pipeline(transaction=False)
                    for _ in range(10):
                        pipe.incr("shared")
                        pipe.append(f"log{n % 4}", "x")
                    pipe.execute()
                c.close()
            except Exception as e:  # reported below
                errors.append(e)

        def mset():
            c = s.client()
            i = 0
            while not stop.is_set() and i < 100000:
                c.mset({"pair:a": i, "pair:b": i})
                i += 1

        def mget():
            try:
                c = s.client()
                for _ in range(2000):
                    a, b = c.mget("pair:a", "pair:b")
                    if a != b:
                        errors.append(AssertionError(f"MGET saw {a} {b}"))
                        return
            except Exception as e:  # reported below
                errors.append(e)

        writer = threading.Thread(target=mset)
        writer.start()
        threads = [threading.Thread(target=incr, args=(n,)) for n in range(40)]
        threads += [threading.Thread(target=mget) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        stop.set()
        writer.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertEqual(int(r.get("shared")), 40 * 20 * 10)
        self.assertEqual(sum(r.strlen(f"log{k}") for k in range(4)),
                         40 * 20 * 10)
        # INFO counts the commands of every loop; RESETSTAT zeroes them.
        info = r.info("stats")
        self.assertGreaterEqual(info["total_commands_processed"], 40 * 20 * 20)
        self.assertEqual(r.config_resetstat(), True)
        self.assertLess(r.info("stats")["total_commands_processed"], 10)
        for c in held:
            c.close()
        self.assertIn("table closed", s.stop())

    def test_a_stalled_client_does_not_stall_the_others(self):
        s = self.start()
        r = s.client()
        r.set("big", b"x" * (1 << 20))
        # Asks for 300 MiB of replies and reads none of them.
        stalled = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        stalled.sendall(b"GET big\r\n" * 300)
        for i in range(200):
            self.assertEqual(r.set(f"k{i}", i), True)
        self.assertEqual(r.get("k199"), b"199")
        stalled.close()
        self.assertEqual(r.ping(), True)

    def raw_exchange(self, port, data):
        """Sends `data` and reads until the server closes (or 30 s)."""
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        try:
            if data:
                sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server closed first: read what it said
        out = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        sock.close()
        return out

    def test_malformed_input_gets_an_error_and_a_close(self):
        s = self.start()
        cases = [
            (b"*1\r\n:3\r\n", b"-ERR Protocol error: expected '$', got ':'"),
            (b"*1\r\n$-7\r\n", b"-ERR Protocol error: invalid bulk length"),
            (b"*1\r\n$999999999999\r\n",
             b"-ERR Protocol error: invalid bulk length"),
            (b"*9999999999\r\n", b"-ERR Protocol error: invalid multibulk length"),
            (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length"),
            (b"SET \"a\r\n", b"-ERR Protocol error: unbalanced quotes"),
            (b"*1\r\n$3\r\nabcXY", b"-ERR Protocol error: expected CRLF"),
            (b"x" * (70 << 10), b"-ERR Protocol error: too big inline request"),
        ]
        for data, want in cases:
            self.assertTrue(self.raw_exchange(s.port, data).startswith(want),
                            data[:40])
        # Truncated frames get no reply; the connection just ends.
        for data in [b"*2\r\n$3\r\nGET\r\n", b"*1\r\n$10\r\nabc", b"*3\r"]:
            self.assertEqual(self.raw_exchange(s.port, data), b"")
        # Random bytes never crash it.
        rng = random.Random(9)
        for _ in range(200):
            junk = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
            self.raw_exchange(s.port, b"*" + junk if rng.random() < 0.5 else junk)
        self.assertEqual(s.client().ping(), True)

    def test_limits_each_have_a_clear_error(self):
        s = self.start("--maxclients=3")
        clients = [socket.create_connection(("127.0.0.1", s.port), timeout=30)
                   for _ in range(3)]
        for c in clients:
            c.sendall(b"PING\r\n")
            self.assertEqual(c.recv(100), b"+PONG\r\n")
        # Nothing sent: a refused client's unread request would make the
        # close a reset, which may overtake the reply.
        refused = self.raw_exchange(s.port, b"")
        self.assertEqual(refused, b"-ERR max number of clients reached\r\n")
        for c in clients:
            c.close()
        time.sleep(0.2)
        self.assertEqual(s.client().ping(), True)

    def test_memory_flags_set_the_tables_budget(self):
        for cache, buffer in [(8, 2), (4, 0)]:
            s = self.start(f"--cache_mb={cache}", f"--write_buffer_mb={buffer}")
            self.assertEqual(s.cli("CONFIG", "GET", "maxmemory"),
                             f"maxmemory\n{(cache + buffer) << 20}")
            r = s.client()
            with r.pipeline(transaction=False) as p:
                for i in range(3000):
                    p.set(f"k{i}", str(i) * 20)
                p.execute()
            self.assertEqual(r.dbsize(), 3000)
            self.assertEqual(r.get("k2999"), b"2999" * 20)
            self.assertIn("table closed", s.stop())

    def test_one_memory_budget_shares_the_cache_with_the_write_buffer(self):
        # A table several times its 1 MiB budget: the write buffer (a
        # quarter of the budget) holds records, and the cache gives it
        # twice their memory.
        s = self.start("--memory_mb=1", "--cache_mb=64", "--write_buffer_mb=64")
        self.assertEqual(s.cli("CONFIG", "GET", "maxmemory"),
                         f"maxmemory\n{1 << 20}")
        r = s.client()
        with r.pipeline(transaction=False) as p:
            for i in range(40000):
                p.set(f"key:{i}", "v" * 100)
            p.execute()
        memory = r.info("memory")
        table = r.info("table")
        self.assertGreater(table["buffered_records"], 0)
        self.assertLess(memory["table_cache_bytes"], 1 << 20)
        self.assertGreaterEqual(memory["table_cache_bytes"], 1 << 19)
        self.assertGreater(memory["table_stash_memory_bytes"], 0)
        self.assertGreater(memory["table_bucket_memory_bytes"],
                           table["buckets"] * 8)
        self.assertEqual(r.dbsize(), 40000)
        for i in range(0, 40000, 997):
            self.assertEqual(r.get(f"key:{i}"), b"v" * 100)
        self.assertIn("table closed", s.stop())
        # Budgets no machine has, or no 64 bits hold: refused, the table as
        # it was.
        for flag, says in [("--memory_mb=1000000000000", "machine's memory"),
                           ("--cache_mb=100000000", "machine's memory"),
                           ("--memory_mb=17592186044416", "64 bits")]:
            bad = subprocess.run([CLI, "serve", self.path, "--port=0", flag],
                                 capture_output=True, text=True, timeout=60)
            self.assertNotEqual(bad.returncode, 0, flag)
            self.assertIn(says, bad.stderr, flag)
        s = self.start()
        self.assertEqual(s.client().dbsize(), 40000)
        self.assertIn("table closed", s.stop())

    def test_pipelined_gets_read_their_blocks_ahead_in_one_batch(self):
        flags = ("--cache_mb=1", "--write_buffer_mb=0")
        s = self.start(*flags)
        r = s.client()
        with r.pipeline(transaction=False) as p:
            for i in range(20000):
                p.set(f"key{i}", "v" * 20)
            p.execute()
        self.assertIn("table closed", s.stop())
        # Open again with an empty cache: 32 pipelined GETs of keys whose
        # blocks only the file holds. Their blocks are read ahead, in one
        # batch, before the first GET runs: every GET then finds its block
        # in the cache (without reading ahead, each distinct block would
        # be a miss of its first GET).
        s = self.start(*flags)
        r = s.client()

        def table():
            info = r.info("table")
            return info["cache_hits"], info["block_file_blocks_read"]

        hits, read = table()
        keys = [f"key{i}" for i in range(0, 20000, 613)][:32]  # one batch
        with r.pipeline(transaction=False) as p:
            for key in keys:
                p.get(key)
            self.assertEqual(p.execute(), [b"v" * 20] * len(keys))
        hits_after, read_after = table()
        self.assertGreaterEqual(read_after - read, 16)  # distinct blocks
        self.assertGreaterEqual(hits_after - hits, len(keys))
        # Absent keys and other commands between the GETs change nothing
        # of what each reply is.
        with r.pipeline(transaction=False) as p:
            for i, key in enumerate(keys):
                p.get(key)
                p.get(f"absent{i}")
                p.strlen(key)
            self.assertEqual(p.execute(), [b"v" * 20, None, 20] * len(keys))

    def stats(self, path):
        out = subprocess.run([CLI, "stats", path, "--json"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_a_new_table_takes_the_layout_flags_or_a_suggested_s0(self):
        # No flags: the s0 suggested for 16-byte keys and 100-byte values in
        # 4 KiB blocks, not the library's 32.
        self.assertIn("table closed", self.start().stop())
        self.assertEqual(self.stats(self.path)["s0"], 4)
        self.assertEqual(self.stats(self.path)["block_size"], 4096)
        # An existing table keeps its layout; a flag that differs is refused.
        s = self.start()
        s.client().set("k", "v")
        self.assertIn("table closed", s.stop())
        self.assertEqual(self.stats(self.path)["s0"], 4)
        bad = subprocess.run([CLI, "serve", self.path, "--port=0", "--s0=16"],
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("s0", bad.stderr)
        # Given flags make the new table's layout.
        other = os.path.join(self.dir, "other")
        s = Server(other, "--block_size=8192", "--s0=8", "--epsilon=0.2")
        self.servers.append(s)
        self.assertIn("table closed", s.stop())
        got = self.stats(other)
        self.assertEqual((got["block_size"], got["s0"], got["epsilon"]),
                         (8192, 8, 0.2))
        # A list is not an s0.
        bad = subprocess.run([CLI, "serve", other, "--port=0", "--s0=4,8"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--s0 takes one value", bad.stderr)

    def test_password(self):
        s = self.start("--requirepass=sesame")
        self.assertEqual(s.cli("GET", "k"), "NOAUTH Authentication required.")
        with self.assertRaisesRegex(
                (redis.AuthenticationError, redis.ResponseError), "WRONGPASS"):
            s.client(password="wrong").ping()
        r = s.client(password="sesame")
        self.assertEqual(r.set("k", "v"), True)
        self.assertEqual(s.cli("-a", "sesame", "--no-auth-warning", "GET", "k"),
                         "v")

    def test_every_acknowledged_write_survives_sigkill(self):
        for mode in ["always", "everysec", "no"]:
            s = self.start(f"--fsync={mode}")
            r = s.client()
            pipe = r.pipeline(transaction=False)
            for i in range(3000):
                pipe.set(f"{mode}:{i}", f"value {i}")
            self.assertTrue(all(pipe.execute()))
            self.assertEqual(r.incr(f"{mode}:counter"), 1)
            r.close()
            s.stop(signal.SIGKILL)
            s = self.start(f"--fsync={mode}")
            r = s.client()
            for m in ["always", "everysec", "no"]:
                got = r.mget([f"{m}:{i}" for i in range(3000)])
                if m == mode or got[0] is not None:
                    self.assertEqual(got, [f"value {i}".encode()
                                           for i in range(3000)], (mode, m))
            self.assertEqual(r.get(f"{mode}:counter"), b"1")
            self.assertIn("table_recovered_records", r.info("persistence"))
            r.close()
            s.stop(signal.SIGKILL)

    def test_sigterm_closes_cleanly(self):
        s = self.start()
        s.client().set("k", "v")
        log = s.stop(signal.SIGTERM)
        self.assertEqual(s.proc.returncode, 0, log)
        self.assertIn("table closed", log)
        s = self.start()
        info = s.client().info("persistence")
        self.assertEqual(info["table_recovered_records"], 0)
        self.assertEqual(s.client().get("k"), b"v")


if __name__ == "__main__":
    unittest.main()
