"""Opens (or creates) a table, writes, reads, walks and closes it; then the
same through roundtable.dbm:
    python3 example.py DIR"""
import sys

import roundtable
import roundtable.dbm

path = sys.argv[1] if len(sys.argv) > 1 else "example_table"
with roundtable.Table(path) as table:
    table["alice"] = "42"
    with table.batch() as batch:
        batch.put("bob", b"b" * 100000)  # a large value, out of line
    print("alice =", table["alice"].decode(), "carol:", table.get("carol"))
    print(len(table), "records, roundtable", roundtable.__version__)

with roundtable.dbm.open(path + ".dbm", "c") as db:
    db[b"key"] = b"value"
    print("dbm:", db.get(b"key"), db.keys())
