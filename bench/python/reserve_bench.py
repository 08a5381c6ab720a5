"""Fills a new table with 10^6 records of 16-byte keys and 100-byte values
through the Python module, with no size hint or with Table.reserve, and
prints the rate, the bucket count, the grows and the bytes written to the
block file and the journal (docs/benchmarks.md, "Size hint").

  PYTHONPATH=build/engine/python python3 bench/python/reserve_bench.py \
      [--reserve] [--records=N] [--dir=PATH]
"""
import argparse
import shutil
import time

import roundtable


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reserve", action="store_true")
    parser.add_argument("--records", type=int, default=1000000)
    parser.add_argument("--dir", default="/tmp/reserve_bench")
    args = parser.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    n = args.records
    value = b"v" * 100
    with roundtable.Table(args.dir) as t:
        if args.reserve:
            t.reserve(n, 16, 100)
        start = time.monotonic()
        for i in range(n):
            key = b"%016x" % ((i * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
            t[key] = value
        seconds = time.monotonic() - start
        st = t.stats()
    shutil.rmtree(args.dir, ignore_errors=True)
    print("%s: %.0f puts/s, %d buckets, %d grows, %.0f MB to the block "
          "file, %.0f MB to the journal" % (
              "reserve" if args.reserve else "no hint", n / seconds,
              st["buckets"], st["logical"]["grows"],
              st["physical_blocks"]["bytes_written"] / 1e6,
              st["physical_journal"]["bytes_written"] / 1e6))


if __name__ == "__main__":
    main()
