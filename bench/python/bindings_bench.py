#!/usr/bin/python3
"""Puts and gets per second through Python: roundtable's Table and
roundtable.dbm beside the peers' Python modules under the same interpreter
(Debian's python3): dbm.gnu, py-lmdb, plyvel (LevelDB) and tkrzw's
HashDBM. Each engine loads N records of 16-byte keys and VALUE-byte values
in random order into a new store in a scratch directory, then reads them
all back in another random order; the timings exclude opening and closing.
Rounds alternate the engines' order; the table gives each engine's median.

roundtable runs with its default options, and again with s0 = 4
("roundtable-s0=4", what SuggestedS0 gives for these records).

Every engine writes one record per call, not synced, its own way:
roundtable logs each put (a crash of the process loses nothing), plyvel
too (LevelDB's log); dbm.gnu and tkrzw write into their files through the
page cache; lmdb commits a transaction per put ("lmdb") or one for the
whole load ("lmdb-txn", which a crash may lose whole). Reads: one call per
key (lmdb: each in its own read transaction, or all in one for
"lmdb-txn").

  bench/python/bindings_bench.py [--records=N] [--value=BYTES]
      [--rounds=R] [--engines=a,b] [--dir=DIR] [--json]
PYTHONPATH must reach the roundtable package (the build tree's
engine/python, or an installed prefix).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time


def keys_for(n, seed):
    rng = random.Random(seed)
    keys = [b"%016x" % rng.getrandbits(64) for _ in range(n)]
    return keys


class Engine:
    name = ""

    def open(self, path):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError


class Roundtable(Engine):
    name = "roundtable"

    def open(self, path):
        import roundtable
        self.t = roundtable.Table(path)
        self.put = self.t.put
        self.get = self.t.get

    def close(self):
        self.t.close()


class RoundtableS0(Roundtable):
    """With s0 = 4, which SuggestedS0 gives for these records (the default
    32 suits blocks of a thousand records): each grow rewrites 7 blocks
    rather than 63."""
    name = "roundtable-s0=4"

    def open(self, path):
        import roundtable
        self.t = roundtable.Table(path, s0=4)
        self.put = self.t.put
        self.get = self.t.get


class RoundtableDbm(Engine):
    name = "roundtable.dbm"

    def open(self, path):
        import roundtable.dbm
        self.db = roundtable.dbm.open(path, "n")
        self.put = self.db.__setitem__
        self.get = self.db.__getitem__

    def close(self):
        self.db.close()


class Gdbm(Engine):
    name = "dbm.gnu"

    def open(self, path):
        import dbm.gnu
        os.makedirs(path)
        self.db = dbm.gnu.open(os.path.join(path, "db"), "nf")
        self.put = self.db.__setitem__
        self.get = self.db.__getitem__

    def close(self):
        self.db.close()


class Lmdb(Engine):
    name = "lmdb"

    def open(self, path):
        import lmdb
        self.env = lmdb.open(path, map_size=8 << 30, sync=False,
                             metasync=False, writemap=False)
        env = self.env

        def put(k, v):
            with env.begin(write=True) as txn:
                txn.put(k, v)

        def get(k):
            with env.begin() as txn:
                return txn.get(k)

        self.put = put
        self.get = get

    def close(self):
        self.env.close()


class LmdbTxn(Lmdb):
    """One write transaction for the whole load, one read transaction for
    all the reads: LMDB's fastest use, and a batch where the others write
    record by record."""
    name = "lmdb-txn"

    def load(self, keys, value):
        with self.env.begin(write=True) as txn:
            put = txn.put
            for k in keys:
                put(k, value)

    def read(self, keys):
        with self.env.begin() as txn:
            get = txn.get
            for k in keys:
                if get(k) is None:
                    raise KeyError(k)


class Plyvel(Engine):
    name = "plyvel"

    def open(self, path):
        import plyvel
        self.db = plyvel.DB(path, create_if_missing=True)
        self.put = self.db.put
        self.get = self.db.get

    def close(self):
        self.db.close()


class Tkrzw(Engine):
    name = "tkrzw"

    def open(self, path):
        import tkrzw
        os.makedirs(path)
        self.db = tkrzw.DBM()
        status = self.db.Open(os.path.join(path, "db.tkh"), True,
                              truncate=True, num_buckets=self.records * 2)
        if not status.IsOK():
            raise RuntimeError(str(status))
        self.put = self.db.Set
        self.get = self.db.Get

    def close(self):
        self.db.Close()


ENGINES = [Roundtable, RoundtableS0, RoundtableDbm, Gdbm, Lmdb, LmdbTxn, Plyvel, Tkrzw]


def run_one(cls, keys, read_keys, value, scratch):
    engine = cls()
    engine.records = len(keys)
    path = os.path.join(scratch, engine.name)
    engine.open(path)
    if hasattr(engine, "load"):
        t0 = time.perf_counter()
        engine.load(keys, value)
        t1 = time.perf_counter()
        engine.read(read_keys)
        t2 = time.perf_counter()
    else:
        put, get = engine.put, engine.get
        t0 = time.perf_counter()
        for k in keys:
            put(k, value)
        t1 = time.perf_counter()
        for k in read_keys:
            if get(k) is None:
                raise KeyError(k)
        t2 = time.perf_counter()
    engine.close()
    shutil.rmtree(path)
    n = len(keys)
    return n / (t1 - t0), n / (t2 - t1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--value", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engines", default="")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    chosen = [c for c in ENGINES
              if not args.engines or c.name in args.engines.split(",")]
    usable = []
    for c in chosen:
        try:
            __import__({"lmdb-txn": "lmdb",
                        "roundtable-s0=4": "roundtable"}.get(c.name, c.name))
            usable.append(c)
        except ImportError as e:
            print(f"skipping {c.name}: {e}", file=sys.stderr)
    keys = keys_for(args.records, 1)
    read_keys = list(keys)
    random.Random(2).shuffle(read_keys)
    value = b"v" * args.value
    results = {c.name: ([], []) for c in usable}
    for r in range(args.rounds):
        order = usable if r % 2 == 0 else list(reversed(usable))
        for c in order:
            scratch = tempfile.mkdtemp(dir=args.dir, prefix="pybench_")
            try:
                put, get = run_one(c, keys, read_keys, value, scratch)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            results[c.name][0].append(put)
            results[c.name][1].append(get)
            print(f"round {r + 1} {c.name}: put {put:,.0f}/s get {get:,.0f}/s",
                  file=sys.stderr)
    rows = [(name, statistics.median(p), statistics.median(g))
            for name, (p, g) in results.items()]
    if args.json:
        print(json.dumps([{"engine": n, "put_per_s": p, "get_per_s": g}
                          for n, p, g in rows]))
        return
    print(f"{args.records} records, {args.value}-byte values, "
          f"python {sys.version.split()[0]}, medians of {args.rounds} rounds")
    print("| engine | put/s | get/s |")
    print("|---|---|---|")
    for n, p, g in rows:
        print(f"| {n} | {p:,.0f} | {g:,.0f} |")


if __name__ == "__main__":
    main()
