"""roundtable: an embedded key-value store on disk (round-hashing).

    import roundtable
    with roundtable.Table("/data/users") as t:
        t[b"alice"] = b"42"          # str keys and values are UTF-8
        t.get("bob", b"none")        # a default for a missing key
        t["carol"]                   # KeyError
        with t.batch() as b:         # all or nothing
            b.put("x", "1")
            b.delete("alice")
        len(t), list(t.items()), t.stats()["buckets"]

Table(path, *, create=True, read_only=False, ...) opens or creates the
table in directory `path`; an existing table keeps the layout it was
created with (block_size, s0, epsilon, hash_seed, block_records), and one
given that differs raises InvalidArgumentError. Every error is a
roundtable.Error with its status code in `.code`; NotFoundError is also a
KeyError and InvalidArgumentError a ValueError.

roundtable.dbm follows the standard library's dbm modules;
roundtable.placement places keys on servers. docs/python.md tells more.
"""
import contextlib as _contextlib

from . import _roundtable
from ._roundtable import Table, WriteBatch, destroy, placement

__version__ = _roundtable.__version__
__all__ = ["Table", "WriteBatch", "destroy", "placement", "Error",
           "NotFoundError", "InvalidArgumentError", "AlreadyExistsError",
           "FailedPreconditionError", "ResourceExhaustedError",
           "DataLossError", "__version__"]


class Error(Exception):
    """A roundtable status that is not OK; `code` names it ("DATA_LOSS")."""
    code = "UNKNOWN"


class NotFoundError(Error, KeyError):
    code = "NOT_FOUND"

    def __str__(self):  # KeyError's str() would repr() the message
        return Exception.__str__(self)


class InvalidArgumentError(Error, ValueError):
    code = "INVALID_ARGUMENT"


class AlreadyExistsError(Error, FileExistsError):
    code = "ALREADY_EXISTS"


class FailedPreconditionError(Error):
    """A closed or read-only table, or one locked by another handle."""
    code = "FAILED_PRECONDITION"


class ResourceExhaustedError(Error):
    code = "RESOURCE_EXHAUSTED"


class DataLossError(Error):
    """A block, value or file that fails its checksum."""
    code = "DATA_LOSS"


_CODES = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
          "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
          "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
          "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
          "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]
_CLASSES = {cls.code: cls for cls in (
    NotFoundError, InvalidArgumentError, AlreadyExistsError,
    FailedPreconditionError, ResourceExhaustedError, DataLossError)}


def _class_of(code):
    if code in _CLASSES:
        return _CLASSES[code]
    # The other codes: a subclass of Error named after the code.
    name = "".join(w.capitalize() for w in code.split("_")) + "Error"
    return type(name, (Error,), {"code": code, "__module__": __name__})


_roundtable._set_exceptions({i: _class_of(c) for i, c in enumerate(_CODES)
                             if i != 0})


@_contextlib.contextmanager
def _batch(self, *, sync=False):
    """A WriteBatch written when the with block ends without an exception
    (and dropped when it raises)."""
    b = WriteBatch()
    yield b
    self.write(b, sync=sync)


Table.batch = _batch


def _repr(self):
    state = "closed" if self.closed else "open"
    return f"<roundtable.Table {self.path!r} ({state})>"


Table.__repr__ = _repr
