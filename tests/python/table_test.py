"""roundtable.Table through Python: every method, the Python conventions
(bytes and str keys, get with a default, KeyError, with, iteration, len,
batches), and the errors a caller meets: a missing key, a closed table, a
locked table, an oversize key, bad arguments, a damaged block."""
import os
import random
import shutil
import tempfile
import unittest

import roundtable


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rt_py_")
        self.path = os.path.join(self.dir, "t")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_mapping_protocol_against_a_dict(self):
        rng = random.Random(5)
        model = {}
        with roundtable.Table(self.path, block_size=1024, s0=4,
                              write_buffer_bytes=16 << 10,
                              checkpoint_bytes=32 << 10) as t:
            for i in range(4000):
                key = b"k%d" % rng.randrange(600)
                op = rng.random()
                if op < 0.5:
                    value = bytes(rng.randrange(256)
                                  for _ in range(rng.choice([0, 5, 90, 3000])))
                    t[key] = value
                    model[key] = value
                elif op < 0.7:
                    if key in model:
                        del t[key]
                        del model[key]
                    else:
                        with self.assertRaises(KeyError):
                            del t[key]
                elif op < 0.8:
                    t.delete(key)  # absent or not: no error
                    model.pop(key, None)
                else:
                    self.assertEqual(t.get(key), model.get(key))
                    self.assertEqual(key in t, key in model)
                if i % 500 == 0:
                    self.assertEqual(len(t), len(model))
            self.assertEqual(len(t), len(model))
            self.assertEqual(dict(t.items()), model)
            self.assertEqual(sorted(t.keys()), sorted(model))
            self.assertEqual(sorted(t), sorted(model))
            self.assertEqual(sorted(t.values()), sorted(model.values()))
            t.check()
        with roundtable.Table(self.path, create=False) as t:
            self.assertEqual(dict(t.items()), model)

    def test_bytes_and_str_keys_and_values(self):
        with roundtable.Table(self.path) as t:
            t["clé"] = "valeur"
            self.assertEqual(t["clé"], "valeur".encode())
            self.assertEqual(t["clé".encode()], "valeur".encode())
            t[b"\x00\xff"] = bytearray(b"ba")
            self.assertEqual(t[b"\x00\xff"], b"ba")
            t.put(b"mv", memoryview(b"xyz"))
            self.assertEqual(t.get(b"mv"), b"xyz")
            t[b"empty"] = b""
            self.assertEqual(t[b"empty"], b"")
            for bad in (1, 2.5, None, ["k"]):
                with self.assertRaises(TypeError):
                    t[bad] = b"v"
                with self.assertRaises(TypeError):
                    t.get(bad)
            with self.assertRaises(TypeError):
                t[b"k"] = 7

    def test_argument_errors_of_the_fast_methods(self):
        with roundtable.Table(self.path) as t:
            t.put("k", "v", sync=True)
            t.put("k", "w", sync=0)
            self.assertEqual(t.get("k", default=None), b"w")
            for call in (lambda: t.get(), lambda: t.get("k", 1, 2),
                         lambda: t.get("k", bogus=1),
                         lambda: t.get("k", 1, default=2),
                         lambda: t.put("k"), lambda: t.put("k", "v", "x"),
                         lambda: t.put("k", "v", bogus=True),
                         lambda: t.__setitem__("k"),
                         lambda: roundtable.Table.get(object(), "k")):
                with self.assertRaises(TypeError):
                    call()

        class Uninitialised(roundtable.Table):
            def __init__(self):
                pass
        with self.assertRaises(TypeError):
            Uninitialised().get("k")

    def test_get_default_and_key_error(self):
        with roundtable.Table(self.path) as t:
            self.assertIsNone(t.get("missing"))
            self.assertEqual(t.get("missing", b"d"), b"d")
            self.assertEqual(t.get("missing", default=3), 3)
            with self.assertRaises(KeyError) as cm:
                t["missing"]
            self.assertEqual(cm.exception.args, ("missing",))
            self.assertFalse("missing" in t)

    def test_large_values_and_multi_get(self):
        with roundtable.Table(self.path) as t:
            big = os.urandom(3 << 20)
            t["big"] = big
            t["small"] = b"s"
            self.assertEqual(t["big"], big)
            self.assertEqual(t.multi_get(["small", "nope", "big", b"small"]),
                             [b"s", None, big, b"s"])
            self.assertEqual(t.multi_get([]), [])
            st = t.stats()
            self.assertEqual(st["value_count"], 1)
            self.assertEqual(st["value_bytes"], len(big))

    def test_batches(self):
        with roundtable.Table(self.path) as t:
            t["gone"] = "x"
            with t.batch() as b:
                b.put("a", "1")
                b.put("b", "2")
                b.delete("gone")
                self.assertEqual(len(b), 3)
                self.assertNotIn("a", t)  # nothing before the block ends
            self.assertEqual((t["a"], t["b"], "gone" in t), (b"1", b"2", False))
            # An exception inside the block drops the batch.
            with self.assertRaises(RuntimeError):
                with t.batch() as b:
                    b.put("c", "3")
                    raise RuntimeError("stop")
            self.assertNotIn("c", t)
            batch = roundtable.WriteBatch()
            batch.put("d", "4")
            batch.clear()
            self.assertEqual(len(batch), 0)
            batch.put("e", "5")
            t.write(batch, sync=True)
            self.assertEqual(t["e"], b"5")
            # A batch with one bad record writes nothing.
            bad = roundtable.WriteBatch()
            bad.put("f", "6")
            bad.put("k" * 5000, "v" * 5000)
            with self.assertRaises(roundtable.InvalidArgumentError):
                t.write(bad)
            self.assertNotIn("f", t)

    def test_durability_calls_and_stats(self):
        with roundtable.Table(self.path, block_size=512, s0=2) as t:
            for i in range(300):
                t.put("k%d" % i, "v", sync=(i % 100 == 0))
            t.delete("k1", sync=True)
            t.flush()
            t.checkpoint()
            t.sync()
            t.check()
            st = t.stats()
            self.assertEqual((st["block_size"], st["s0"]), (512, 2))
            self.assertEqual(st["records"], 299)
            self.assertEqual(t.count(), 299)
            self.assertIn("blocks_written", st["physical_blocks"])
            self.assertIn("grows", st["logical"])
            self.assertGreater(t.max_key_bytes, 0)
            self.assertEqual(t.path, self.path)
            self.assertFalse(t.closed)
        self.assertTrue(t.closed)
        self.assertIn("closed", repr(t))

    def test_one_memory_budget(self):
        budget = 256 << 10
        with roundtable.Table(self.path, block_size=1024, s0=4,
                              memory_bytes=budget) as t:
            self.assertEqual(t.stats()["cache_bytes"], budget)
            least = budget
            for i in range(20000):
                t["k%d" % (i * 7919 % 100003)] = b"v" * 60
                if i % 500 == 0:
                    least = min(least, t.stats()["cache_bytes"])
            st = t.stats()
            self.assertLess(least, budget)
            self.assertGreaterEqual(least, budget // 2 - budget // 32)
            self.assertGreater(st["stash_memory_bytes"], 0)
            self.assertGreater(st["bucket_memory_bytes"], st["buckets"] * 8)
            t.flush()
            self.assertEqual(t.stats()["cache_bytes"], budget)
            self.assertEqual(t.count(), 20000)

    def test_reserve_takes_the_buckets_at_once(self):
        with roundtable.Table(self.path, block_size=512, s0=2) as t:
            t.reserve(5000, key_bytes=8, value_bytes=20)
            st = t.stats()
            self.assertGreater(st["buckets"], 200)
            self.assertEqual(st["min_buckets"], st["buckets"])
            for i in range(5000):
                t["k%d" % i] = b"v" * 20
            t.flush()
            self.assertEqual(t.stats()["logical"]["grows"], 0)
            t.reserve(0, 0, 0)
            self.assertEqual(t.stats()["min_buckets"], 0)

    def test_backup_is_a_table_of_its_own(self):
        copy = os.path.join(self.dir, "copy")
        with roundtable.Table(self.path, block_size=1024) as t:
            for i in range(500):
                t["k%d" % i] = b"v" * (i % 7)
            t["big"] = b"B" * 5000  # out of line
            t.backup(copy)
            t["after"] = b"x"  # not in the copy
            with self.assertRaises(roundtable.AlreadyExistsError):
                t.backup(copy)
        with roundtable.Table(copy) as c, \
                roundtable.Table(self.path) as t:
            expected = dict(t.items())
            del expected[b"after"]
            self.assertEqual(dict(c.items()), expected)
            self.assertEqual(c.stats()["block_size"], 1024)
            c.check()

    def test_layout_is_stored(self):
        roundtable.Table(self.path, block_size=2048, s0=8, epsilon=0.2).close()
        with roundtable.Table(self.path) as t:
            st = t.stats()
            self.assertEqual((st["block_size"], st["s0"], st["epsilon"]),
                             (2048, 8, 0.2))
        with self.assertRaises(roundtable.InvalidArgumentError) as cm:
            roundtable.Table(self.path, block_size=4096)
        self.assertIn("block_size = 2048, not 4096", str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")

    def test_errors(self):
        with self.assertRaises(roundtable.NotFoundError):
            roundtable.Table(self.path, create=False)
        with self.assertRaises(roundtable.InvalidArgumentError):
            roundtable.Table(self.path, block_size=1000)
        with self.assertRaises(roundtable.InvalidArgumentError):
            roundtable.Table(self.path, backend="floppy")
        t = roundtable.Table(self.path)
        # Locked: a second handle on an open table.
        with self.assertRaises(roundtable.FailedPreconditionError) as cm:
            roundtable.Table(self.path)
        self.assertIn("locked", str(cm.exception))
        with self.assertRaises(roundtable.FailedPreconditionError):
            roundtable.Table(self.path, read_only=True)
        # Oversize key: longer than max_key_bytes with a value that does not
        # fit inline beside it.
        key = b"k" * (t.max_key_bytes + 1)
        with self.assertRaises(roundtable.InvalidArgumentError):
            t[key] = b"v" * 2000
        t[b"k" * t.max_key_bytes] = b"v" * 2000  # the longest key takes it
        t.close()
        t.close()  # closing again does nothing
        # Closed: every call raises FailedPreconditionError.
        for call in (lambda: t["k"], lambda: t.get("k"),
                     lambda: t.put("k", "v"), lambda: len(t),
                     lambda: list(t), lambda: t.sync(),
                     lambda: t.multi_get(["k"]), lambda: t.check()):
            with self.assertRaises(roundtable.FailedPreconditionError):
                call()
        # Read-only: writes refused, reads fine.
        with roundtable.Table(self.path, read_only=True) as r:
            self.assertEqual(r[b"k" * r.max_key_bytes], b"v" * 2000)
            with self.assertRaises(roundtable.FailedPreconditionError):
                r["x"] = "y"
        with self.assertRaises(roundtable.AlreadyExistsError):
            roundtable.Table(self.path, error_if_exists=True)

    def test_damaged_block_is_data_loss(self):
        with roundtable.Table(self.path, block_size=512, s0=4,
                              write_buffer_bytes=0) as t:
            for i in range(200):
                t["key%d" % i] = "value"
        with open(os.path.join(self.path, "blocks"), "r+b") as f:
            size = f.seek(0, 2)
            for at in range(2 * 512 + 100, size, 512):
                f.seek(at)
                f.write(b"garbage!")
        with roundtable.Table(self.path, block_cache_bytes=0) as t:
            with self.assertRaises(roundtable.DataLossError) as cm:
                t["key7"]
            self.assertIn("bucket", str(cm.exception))
            with self.assertRaises(roundtable.DataLossError):
                t.check()
            with self.assertRaises(roundtable.DataLossError):
                list(t.items())

    def test_iterator_outlives_nothing_it_needs(self):
        t = roundtable.Table(self.path)
        for i in range(50):
            t["k%d" % i] = "v"
        it = iter(t.items())
        del t  # the iterator keeps the table
        self.assertEqual(len(list(it)), 50)

    def test_destroy(self):
        roundtable.Table(self.path).close()
        roundtable.destroy(self.path)
        self.assertFalse(os.path.exists(self.path))
        roundtable.destroy(self.path)  # nothing there: fine

    def test_version(self):
        self.assertRegex(roundtable.__version__, r"^\d+\.\d+\.\d+$")


class PlacementTest(unittest.TestCase):
    def test_every_scheme_places_on_its_nodes(self):
        for name in roundtable.placement.names():
            p = roundtable.placement.Placement(name, s0=2)
            self.assertEqual(p.name, name)
            self.assertIsInstance(p.params, str)
            self.assertIsNone(p.locate(123))
            p.add_nodes([10, 11, 12])
            p.add_node(13)
            self.assertEqual(len(p), 4)
            self.assertEqual(sorted(p.nodes), [10, 11, 12, 13])
            for i in range(200):
                self.assertIn(p.locate_key("key%d" % i), (10, 11, 12, 13))
            node = p.locate(roundtable.placement.hash_key("alice"))
            self.assertEqual(node, p.locate_key("alice"))
            p.remove_node(13)  # the newest: every scheme lets it go
            self.assertEqual(len(p), 3)

    def test_errors(self):
        with self.assertRaises(roundtable.InvalidArgumentError):
            roundtable.placement.Placement("nosuch")
        p = roundtable.placement.Placement("ring")
        p.add_node(1)
        with self.assertRaises(roundtable.AlreadyExistsError):
            p.add_node(1)
        with self.assertRaises(roundtable.NotFoundError):
            p.remove_node(2)
        self.assertNotEqual(roundtable.placement.hash_key("a"),
                            roundtable.placement.hash_key("a", seed=1))


if __name__ == "__main__":
    unittest.main()
