"""roundtable.dbm against the standard library's dbm.gnu: the same
operations on both, compared result by result and exception by exception
(flags, KeyError, bytes and str keys, closed-database errors, firstkey and
nextkey, setdefault, the with statement); and what differs, as
docs/python.md says."""
import dbm.gnu
import os
import random
import shutil
import stat
import tempfile
import unittest

import roundtable
import roundtable.dbm as rdbm


def outcome(fn):
    """What a call did: ("ok", result) or ("raised", the exception's kind:
    KeyError, TypeError or the module's error)."""
    try:
        return ("ok", fn())
    except KeyError:
        return ("raised", "KeyError")
    except TypeError:
        return ("raised", "TypeError")
    except (rdbm.error, dbm.gnu.error):
        return ("raised", "error")


class DbmTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rt_dbm_")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def both(self, name, flag):
        return (dbm.gnu.open(os.path.join(self.dir, name + ".gdbm"), flag),
                rdbm.open(os.path.join(self.dir, name + ".rt"), flag))

    def test_same_answers_as_dbm_gnu_through_random_operations(self):
        gnu, rt = self.both("random", "c")
        rng = random.Random(11)
        keys = [b"a", "b", b"c\x00d", "é", b"", b"long" * 100]
        for i in range(3000):
            key = rng.choice(keys)
            value = rng.choice([b"", b"v", "w", b"x" * 2000, "ü" * 3])
            op = rng.randrange(8)
            calls = {
                0: lambda db: db.__setitem__(key, value),
                1: lambda db: db[key],
                2: lambda db: db.__delitem__(key),
                3: lambda db: key in db,
                4: lambda db: db.get(key),
                5: lambda db: db.get(key, b"default"),
                6: lambda db: db.setdefault(key, value),
                7: lambda db: len(db),
            }
            a, b = outcome(lambda: calls[op](gnu)), outcome(lambda: calls[op](rt))
            self.assertEqual(a, b, f"step {i}: op {op} on {key!r}")
        self.assertEqual(sorted(gnu.keys()), sorted(rt.keys()))
        gnu.close()
        rt.close()

    def test_bad_types_are_type_errors_in_both(self):
        gnu, rt = self.both("types", "c")
        for db in (gnu, rt):
            for call in (lambda: db.__setitem__(1, b"v"),
                         lambda: db.__setitem__(b"k", 1),
                         lambda: db[None], lambda: db.get(2.5)):
                self.assertEqual(outcome(call), ("raised", "TypeError"))
            db.close()

    def test_flags(self):
        for name, flag in (("r", "r"), ("w", "w")):
            with self.assertRaises(dbm.gnu.error):
                dbm.gnu.open(os.path.join(self.dir, name + ".gdbm"), flag)
            with self.assertRaises(rdbm.error):
                rdbm.open(os.path.join(self.dir, name + ".rt"), flag)
        gnu, rt = self.both("flags", "c")
        for db in (gnu, rt):
            db[b"k"] = b"v"
            db.close()
        # 'w': writable, keeps what is there.
        gnu, rt = self.both("flags", "w")
        for db in (gnu, rt):
            self.assertEqual(db[b"k"], b"v")
            db[b"k2"] = b"v2"
            db.close()
        # 'r': read-only: reads fine, a write is the module's error.
        gnu, rt = self.both("flags", "r")
        for db in (gnu, rt):
            self.assertEqual(db[b"k2"], b"v2")
            self.assertEqual(outcome(lambda: db.__setitem__(b"x", b"y")),
                             ("raised", "error"))
            self.assertEqual(outcome(lambda: db.__delitem__(b"k")),
                             ("raised", "error"))
            db.close()
        # 'n': always new and empty; 'c' on an existing one keeps it.
        gnu, rt = self.both("flags", "n")
        for db in (gnu, rt):
            self.assertEqual(len(db), 0)
            db[b"n"] = b"1"
            db.close()
        gnu, rt = self.both("flags", "cf")
        for db in (gnu, rt):
            self.assertEqual(db.keys(), [b"n"])
            db.close()
        # 's': every write synced; both take it.
        gnu, rt = self.both("flags", "ws")
        for db in (gnu, rt):
            db[b"s"] = b"1"
            db.close()
        for bad in ("x", "", "rz"):
            with self.assertRaises(rdbm.error):
                rdbm.open(os.path.join(self.dir, "bad"), bad)
        self.assertTrue(set(rdbm.open_flags) <= set(dbm.gnu.open_flags))

    def test_closed_database_raises_error(self):
        gnu, rt = self.both("closed", "c")
        for db in (gnu, rt):
            db[b"k"] = b"v"
            db.close()
            for call in (lambda: db[b"k"], lambda: db.__setitem__(b"k", b"v"),
                         lambda: db.__delitem__(b"k"), lambda: db.keys(),
                         lambda: len(db), lambda: db.get(b"k"),
                         lambda: db.firstkey(), lambda: db.sync(),
                         lambda: db.reorganize()):
                self.assertEqual(outcome(call), ("raised", "error"))
            db.close()  # again: nothing happens

    def test_firstkey_nextkey_walk_every_key_once(self):
        gnu, rt = self.both("walk", "c")
        for db in (gnu, rt):
            self.assertIsNone(db.firstkey())
            for i in range(300):
                db["key%d" % i] = "v"
            walked = []
            k = db.firstkey()
            while k is not None:
                walked.append(k)
                k = db.nextkey(k)
            self.assertEqual(sorted(walked),
                             sorted(b"key%d" % i for i in range(300)))
            db.close()

    def test_with_statement_sync_reorganize(self):
        path = os.path.join(self.dir, "ctx.rt")
        with rdbm.open(path, "c") as db:
            db["a"] = "1"
            db[b"b"] = b"2"
            self.assertEqual(sorted(db), [b"a", b"b"])  # iterating: the keys
            db.sync()
            db.reorganize()
            self.assertIn("open", repr(db))
        self.assertTrue(db.closed)
        with rdbm.open(path) as db:
            self.assertEqual(db["a"], b"1")

    def test_mode_sets_the_new_files_permissions(self):
        path = os.path.join(self.dir, "mode.rt")
        umask = os.umask(0o022)
        try:
            rdbm.open(path, "c", 0o640).close()
        finally:
            os.umask(umask)
        for name in os.listdir(path):
            self.assertEqual(
                stat.S_IMODE(os.stat(os.path.join(path, name)).st_mode),
                0o640 & ~0o022, name)

    def test_locked_and_damaged_are_errors(self):
        path = os.path.join(self.dir, "lock.rt")
        db = rdbm.open(path, "c")
        with self.assertRaises(rdbm.error):
            rdbm.open(path, "w")
        db.close()
        # Every error of the table is a dbm error and a roundtable one.
        self.assertTrue(issubclass(rdbm.error, roundtable.Error))
        self.assertTrue(issubclass(rdbm.error, OSError))


if __name__ == "__main__":
    unittest.main()
