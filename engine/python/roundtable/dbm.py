"""roundtable.dbm: roundtable behind the interface of the standard library's
dbm modules (dbm.gnu is the model), so that code written for dbm runs on
roundtable by changing one import:

    import roundtable.dbm as dbm
    with dbm.open("cache", "c") as db:
        db[b"key"] = b"value"
        db.get(b"other", b"default")

A database is a table directory (docs/python.md says what differs from
dbm.gnu, and why).
"""
import os as _os

import roundtable as _rt

__all__ = ["open", "error", "open_flags"]

# The flags open() takes: r, w, c or n, then any of f and s.
open_flags = "rwcnfs"


class error(_rt.Error, OSError):
    """What a database raises for anything but a missing key (KeyError):
    a closed or read-only database, a damaged file, a bad argument."""


class _Database(_rt.Table):
    """A dbm database: the mapping protocol over bytes (str keys and values
    are encoded as UTF-8), keys(), get(), setdefault(), firstkey() and
    nextkey(), sync(), reorganize(), close() and the with statement. The
    table's own methods do the work (every error but a missing key raises
    `error`, which the table is given); only what dbm adds is here."""

    def __init__(self, path, *, create, read_only, sync):
        self._walk = None
        super().__init__(path, create=create, read_only=read_only,
                         sync=sync, _error_class=error)

    def __iter__(self):
        return iter(self.keys())

    def setdefault(self, key, default=b""):
        """The value of key; when it is missing, stores default first."""
        value = self.get(key)
        if value is None:
            self[key] = default
            value = self[key]
        return value

    def keys(self):
        """Every key, as a list of bytes (in the table's order)."""
        return list(super().keys())

    def firstkey(self):
        """The first key of a walk over the database, or None when it is
        empty. The walk is a list of the keys taken here, which nextkey()
        follows."""
        keys = self.keys()
        self._walk = {k: i for i, k in enumerate(keys)}, keys
        return keys[0] if keys else None

    def nextkey(self, key):
        """The key after `key` in the walk firstkey() began, or None after
        the last one (or for a key not in the walk)."""
        if isinstance(key, str):
            key = key.encode()
        if self._walk is None or self.closed:
            self.firstkey()
        index, keys = self._walk
        i = index.get(key)
        if i is None or i + 1 >= len(keys):
            return None
        return keys[i + 1]

    def reorganize(self):
        """Checkpoints the table: the log is emptied and freed value space
        becomes reusable (a table never needs rebuilding to stay fast)."""
        self.checkpoint()

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"<roundtable.dbm database {self.path!r} ({state})>"


def open(file, flag="r", mode=0o666):
    """Opens the database in directory `file`, as dbm.gnu.open does.

    flag: 'r' to read an existing database (the default), 'w' to read and
    write an existing one, 'c' to read and write one created if missing,
    'n' to create a new, empty one; then 'f' (fast: the default, writes are
    not synced) or 's' (every write synced before it returns) may follow.
    mode: the permissions of the files a new database creates, less the
    umask.
    """
    if not isinstance(flag, str) or not flag or flag[0] not in "rwcn":
        raise error(f"flag must begin with r, w, c or n, not {flag!r}")
    for extra in flag[1:]:
        if extra not in "fs":
            raise error(f"flag {extra!r} is not supported (open_flags: "
                        f"{open_flags!r})")
    file = _os.fspath(file)
    kind = flag[0]
    existed = _os.path.exists(_os.path.join(file, "blocks"))
    if kind == "n" and _os.path.exists(file):
        try:
            _rt.destroy(file)
        except _rt.Error as e:
            raise error(str(e)) from e
        existed = False
    if kind in "rw" and not existed:
        raise error(f"no database at {file!r}")
    db = _Database(file, create=kind in "cn", read_only=kind == "r",
                   sync="s" in flag[1:])
    if not existed:
        umask = _os.umask(0)
        _os.umask(umask)
        for name in _os.listdir(file):
            _os.chmod(_os.path.join(file, name), mode & ~umask & 0o666)
    return db
