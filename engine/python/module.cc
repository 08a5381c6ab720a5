// roundtable._roundtable: the Python binding of the table and the
// placement library (pybind11). roundtable/__init__.py is the module users
// import; it defines the exception classes and hands them to
// _set_exceptions, so that every status raised here is one of them.
//
// Keys and values are bytes, or str (encoded as UTF-8); values may also be
// any object with the buffer protocol (bytearray, memoryview). Reads and
// writes hold the GIL (a point read or write takes about a microsecond, less
// than releasing it would add); Sync, Flush, Checkpoint, Check, Close and
// synced writes release it.
//
// Thread-safety: a Table may be used from any number of Python threads, as
// the C++ Table; an iterator from one at a time.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/python/bindings.h"
#include "roundtable/table.h"
#include "roundtable/version.h"

namespace roundtable::python {
namespace {

py::dict LedgerDict(const IoStats& p) {
  py::dict d;
  d["blocks_read"] = p.blocks_read;
  d["bytes_read"] = p.bytes_read;
  d["blocks_written"] = p.blocks_written;
  d["bytes_written"] = p.bytes_written;
  d["read_ops"] = p.read_ops;
  d["write_ops"] = p.write_ops;
  d["submissions"] = p.submissions;
  d["syncs"] = p.syncs;
  d["wait_ns"] = p.wait_ns;
  return d;
}

py::dict StatsDict(const TableStats& s) {
  py::dict d;
  d["buckets"] = s.buckets;
  d["min_buckets"] = s.min_buckets;
  d["records"] = s.records;
  d["stash_records"] = s.stash_records;
  d["stash_bytes"] = s.stash_bytes;
  d["buffered_records"] = s.buffered_records;
  d["buffered_deletes"] = s.buffered_deletes;
  d["buffered_bytes"] = s.buffered_bytes;
  d["data_bytes"] = s.data_bytes;
  d["block_size"] = s.block_size;
  d["block_records"] = s.block_records;
  d["s0"] = s.s0;
  d["epsilon"] = s.epsilon;
  d["utilization"] = s.utilization;
  py::dict l;
  const LogicalLedger& g = s.logical;
  l["get_reads"] = g.get_reads;
  l["put_reads"] = g.put_reads;
  l["put_writes"] = g.put_writes;
  l["delete_reads"] = g.delete_reads;
  l["delete_writes"] = g.delete_writes;
  l["grow_reads"] = g.grow_reads;
  l["grow_writes"] = g.grow_writes;
  l["shrink_reads"] = g.shrink_reads;
  l["shrink_writes"] = g.shrink_writes;
  l["stash_copy_writes"] = g.stash_copy_writes;
  l["buffer_drains"] = g.buffer_drains;
  l["distribute_drains"] = g.distribute_drains;
  l["grows"] = g.grows;
  l["shrinks"] = g.shrinks;
  d["logical"] = l;
  d["cache_hits"] = s.cache_hits;
  d["held_hits"] = s.held_hits;
  d["cache_misses"] = s.cache_misses;
  d["cache_bytes"] = s.cache_bytes;
  d["stash_memory_bytes"] = s.stash_memory_bytes;
  d["bucket_memory_bytes"] = s.bucket_memory_bytes;
  d["held_blocks"] = s.held_blocks;
  d["unwritten_blocks"] = s.unwritten_blocks;
  d["written_ahead"] = s.written_ahead;
  d["value_count"] = s.value_count;
  d["value_bytes"] = s.value_bytes;
  d["value_file_bytes"] = s.value_file_bytes;
  d["value_free_bytes"] = s.value_free_bytes;
  d["wal_bytes"] = s.wal_bytes;
  d["checkpoints"] = s.checkpoints;
  d["recovered_records"] = s.recovered_records;
  d["recovered_journal"] = s.recovered_journal;
  d["recovery_ns"] = s.recovery_ns;
  d["physical_blocks"] = LedgerDict(s.physical_blocks);
  d["physical_stash"] = LedgerDict(s.physical_stash);
  d["physical_wal"] = LedgerDict(s.physical_wal);
  d["physical_journal"] = LedgerDict(s.physical_journal);
  d["physical_buffer"] = LedgerDict(s.physical_buffer);
  d["physical_values"] = LedgerDict(s.physical_values);
  d["physical_spacemap"] = LedgerDict(s.physical_spacemap);
  d["physical_blockmap"] = LedgerDict(s.physical_blockmap);
  return d;
}

Backend ParseBackendName(const std::string& name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "uring") return Backend::kUring;
  if (name == "posix") return Backend::kPosix;
  if (name == "memory") return Backend::kMemory;
  if (name == "mmap") return Backend::kMmap;
  Raise(absl::InvalidArgumentError(
      "backend must be auto, uring, posix, memory or mmap, not " + name));
  return Backend::kAuto;
}

// The Python Table: owns the C++ one.
class PyTable {
 public:
  PyTable(const std::string& path, bool create, bool read_only,
          bool error_if_exists, std::optional<uint32_t> block_size,
          std::optional<uint64_t> s0, std::optional<double> epsilon,
          std::optional<uint64_t> hash_seed,
          std::optional<uint32_t> block_records,
          std::optional<uint64_t> block_cache_bytes,
          std::optional<uint64_t> checkpoint_bytes,
          std::optional<uint64_t> write_buffer_bytes,
          std::optional<uint64_t> value_checkpoint_bytes,
          std::optional<uint64_t> memory_bytes, const std::string& backend, bool direct_io, bool paranoid_checks,
          bool sync, py::object error_class)
      : path_(path), sync_(sync), error_class_(std::move(error_class)) {
    Options o;
    o.create_if_missing = create;
    o.read_only = read_only;
    o.error_if_exists = error_if_exists;
    o.block_size = block_size;
    o.s0 = s0;
    o.epsilon = epsilon;
    o.hash_seed = hash_seed;
    o.block_records = block_records;
    if (block_cache_bytes) o.block_cache_bytes = *block_cache_bytes;
    if (checkpoint_bytes) o.checkpoint_bytes = *checkpoint_bytes;
    if (write_buffer_bytes) o.write_buffer_bytes = *write_buffer_bytes;
    if (value_checkpoint_bytes) {
      o.value_checkpoint_bytes = *value_checkpoint_bytes;
    }
    if (memory_bytes) o.memory_bytes = *memory_bytes;
    o.backend = ParseBackendName(backend);
    o.direct_io = direct_io;
    o.paranoid_checks = paranoid_checks;
    absl::StatusOr<std::unique_ptr<Table>> t;
    {
      py::gil_scoped_release release;
      t = Table::Open(o, path);
    }
    Check(t.status());
    table_ = *std::move(t);
  }

  // Raises a status that is not OK: as the class of its code, or (for
  // roundtable.dbm) every code but NOT_FOUND as the table's error class.
  void Check(const absl::Status& status) const {
    if (status.ok()) return;
    if (!error_class_.is_none() && !absl::IsNotFound(status)) {
      throw StatusError{status, error_class_};
    }
    Raise(status);
  }

  py::object Get(py::handle key, py::object fallback) {
    thread_local std::string value;
    const absl::Status s = table_->Get(KeyOf(key), &value);
    if (s.ok()) return ToBytes(value);
    if (absl::IsNotFound(s)) return fallback;
    Check(s);
    return py::none();
  }

  py::bytes GetItem(py::handle key) {
    thread_local std::string value;
    const absl::Status s = table_->Get(KeyOf(key), &value);
    if (absl::IsNotFound(s)) RaiseKeyError(key);
    Check(s);
    return ToBytes(value);
  }

  bool Contains(py::handle key) {
    thread_local std::string value;
    const absl::Status s = table_->Get(KeyOf(key), &value);
    if (absl::IsNotFound(s)) return false;
    Check(s);
    return true;
  }

  void Put(py::handle key, py::handle value, bool sync) {
    std::optional<py::buffer_info> holder;
    const std::string_view k = KeyOf(key);
    const std::string_view v = BytesOf(value, &holder, "value");
    if (sync || sync_) {
      absl::Status s;
      {
        py::gil_scoped_release release;
        s = table_->Put(k, v, {.sync = true});
      }
      Check(s);
    } else {
      Check(table_->Put(k, v));
    }
  }

  void Delete(py::handle key, bool sync) {
    const std::string_view k = KeyOf(key);
    if (sync || sync_) {
      absl::Status s;
      {
        py::gil_scoped_release release;
        s = table_->Delete(k, {.sync = true});
      }
      Check(s);
    } else {
      Check(table_->Delete(k));
    }
  }

  // del table[key]: KeyError for an absent key, as a dict (one lookup
  // more than delete()).
  void DelItem(py::handle key) {
    if (!Contains(key)) RaiseKeyError(key);
    Delete(key, false);
  }

  py::list MultiGet(py::iterable keys) {
    std::vector<std::string_view> views;
    std::vector<py::object> kept;  // the keys' objects outlive the views
    for (py::handle k : keys) {
      kept.push_back(py::reinterpret_borrow<py::object>(k));
      views.push_back(KeyOf(k));
    }
    std::vector<absl::StatusOr<std::string>> got = table_->MultiGet(views);
    py::list out(got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].ok()) {
        out[i] = ToBytes(*got[i]);
      } else if (absl::IsNotFound(got[i].status())) {
        out[i] = py::none();
      } else {
        Check(got[i].status());
      }
    }
    return out;
  }

  void Write(const WriteBatch& batch, bool sync) {
    absl::Status s;
    if (sync || sync_) {
      py::gil_scoped_release release;
      s = table_->Write(batch, {.sync = true});
    } else {
      s = table_->Write(batch);
    }
    Check(s);
  }

  uint64_t Count() {
    absl::StatusOr<uint64_t> n = table_->Count();
    Check(n.status());
    return *n;
  }

  template <typename Fn>
  void Released(Fn fn) {
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = fn(*table_);
    }
    Check(s);
  }

  void Close() {
    if (closed_) return;
    Released([](Table& t) { return t.Close(); });
    closed_ = true;
  }

  Table& table() { return *table_; }
  const std::string& path() const { return path_; }
  bool closed() const { return closed_; }

 private:
  std::string path_;
  bool sync_ = false;
  bool closed_ = false;
  py::object error_class_;  // None: each code's own class
  std::unique_ptr<Table> table_;
};

// Iterates a table's keys, values or (key, value) pairs.
class PyIterator {
 public:
  enum class Kind { kKeys, kValues, kItems };
  PyIterator(py::object owner, PyTable& table, Kind kind)
      : owner_(std::move(owner)),
        table_(&table),
        it_(table.table().NewIterator()),
        kind_(kind) {}

  py::object Next() {
    if (!started_) {
      started_ = true;
    } else if (it_->Valid()) {
      it_->Next();
    }
    if (!it_->Valid()) {
      table_->Check(it_->status());
      throw py::stop_iteration();
    }
    switch (kind_) {
      case Kind::kKeys:
        return ToBytes(it_->key());
      case Kind::kValues:
        return ToBytes(it_->value());
      case Kind::kItems:
        return py::make_tuple(ToBytes(it_->key()), ToBytes(it_->value()));
    }
    return py::none();
  }

 private:
  py::object owner_;  // the table, kept alive while the walk lasts
  PyTable* table_;    // owner_'s
  std::unique_ptr<Iterator> it_;
  Kind kind_;
  bool started_ = false;
};

// A method that starts a walk over the table of `kind`.
auto Walk(PyIterator::Kind kind) {
  return [kind](py::object self) {
    return PyIterator(self, self.cast<PyTable&>(), kind);
  };
}

// The table's hot methods (get, [], in, put, []=) as plain CPython
// fast-call functions, which Python calls without pybind11's dispatch
// (argument conversion by overload resolution costs about as much as a
// cached Get). Each converts exceptions as pybind11 would.
template <typename Fn>
PyObject* Guarded(Fn fn) {
  try {
    return fn();
  } catch (const StatusError& e) {
    SetError(e);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// The PyTable of `self` (an instance of Table or a subclass: the method
// descriptors check the type), or a TypeError when __init__ never ran.
PyTable& SelfOf(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  py::detail::value_and_holder v =
      inst->get_value_and_holder(nullptr, /*throw_if_missing=*/false);
  if (!v || !v.holder_constructed()) {
    throw py::type_error("Table.__init__ was not called");
  }
  return *static_cast<PyTable*>(v.value_ptr());
}

// Finds `name` among a fast call's keyword arguments: its value, or null.
PyObject* Keyword(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                  const char* name, const char* function) {
  if (kwnames == nullptr) return nullptr;
  PyObject* found = nullptr;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
    PyObject* k = PyTuple_GET_ITEM(kwnames, i);
    if (PyUnicode_CompareWithASCIIString(k, name) != 0) {
      throw py::type_error(std::string(function) +
                           "() got an unexpected keyword argument '" +
                           std::string(py::str(k)) + "'");
    }
    found = args[nargs + i];
  }
  return found;
}

void CheckArgs(Py_ssize_t nargs, Py_ssize_t low, Py_ssize_t high,
               const char* function) {
  if (nargs < low || nargs > high) {
    throw py::type_error(
        std::string(function) + "() takes " + std::to_string(low) +
        (low == high ? "" : " to " + std::to_string(high)) +
        " positional arguments but " + std::to_string(nargs) + " were given");
  }
}

PyObject* FastGet(PyObject* self, PyObject* const* args, size_t n,
                  PyObject* kwnames) {
  return Guarded([&]() -> PyObject* {
    const Py_ssize_t nargs = PyVectorcall_NARGS(n);
    CheckArgs(nargs, 1, 2, "get");
    PyObject* fallback = nargs == 2 ? args[1] : nullptr;
    if (PyObject* kw = Keyword(args, nargs, kwnames, "default", "get")) {
      if (fallback != nullptr) throw py::type_error("get() got default twice");
      fallback = kw;
    }
    return SelfOf(self)
        .Get(args[0], py::reinterpret_borrow<py::object>(
                          fallback != nullptr ? fallback : Py_None))
        .release()
        .ptr();
  });
}

PyObject* FastGetItem(PyObject* self, PyObject* key) {
  return Guarded([&] { return SelfOf(self).GetItem(key).release().ptr(); });
}

PyObject* FastContains(PyObject* self, PyObject* key) {
  return Guarded(
      [&] { return py::bool_(SelfOf(self).Contains(key)).release().ptr(); });
}

PyObject* FastPut(PyObject* self, PyObject* const* args, size_t n,
                  PyObject* kwnames) {
  return Guarded([&]() -> PyObject* {
    const Py_ssize_t nargs = PyVectorcall_NARGS(n);
    CheckArgs(nargs, 2, 2, "put");
    PyObject* sync = Keyword(args, nargs, kwnames, "sync", "put");
    const int on = sync != nullptr ? PyObject_IsTrue(sync) : 0;
    if (on < 0) throw py::error_already_set();
    SelfOf(self).Put(args[0], args[1], on != 0);
    Py_RETURN_NONE;
  });
}

PyObject* FastSetItem(PyObject* self, PyObject* const* args, size_t n) {
  return Guarded([&]() -> PyObject* {
    CheckArgs(PyVectorcall_NARGS(n), 2, 2, "__setitem__");
    SelfOf(self).Put(args[0], args[1], false);
    Py_RETURN_NONE;
  });
}

// Replaces the pybind11 definitions of the hot methods on `cls`.
void DefineFastMethods(py::handle cls) {
  static PyMethodDef defs[] = {
      {"get",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FastGet)),
       METH_FASTCALL | METH_KEYWORDS,
       "get(key, default=None): the value of key (bytes), or default."},
      {"__getitem__", FastGetItem, METH_O,
       "table[key]: the value of key (bytes); KeyError when it is missing."},
      {"__contains__", FastContains, METH_O, "key in table"},
      {"put",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FastPut)),
       METH_FASTCALL | METH_KEYWORDS,
       "put(key, value, *, sync=False): inserts or replaces; with sync the "
       "write survives power loss once put returns."},
      {"__setitem__",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FastSetItem)),
       METH_FASTCALL, "table[key] = value"},
  };
  for (PyMethodDef& def : defs) {
    PyObject* descr =
        PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def);
    if (descr == nullptr) throw py::error_already_set();
    const int set = PyObject_SetAttrString(cls.ptr(), def.ml_name, descr);
    Py_DECREF(descr);
    if (set != 0) throw py::error_already_set();
  }
}

}  // namespace
}  // namespace roundtable::python

PYBIND11_MODULE(_roundtable, m) {
  using namespace roundtable;          // NOLINT
  using namespace roundtable::python;  // NOLINT
  m.doc() = "roundtable's binding; import roundtable.";
  m.attr("__version__") = ROUNDTABLE_VERSION_STRING;

  m.def("_set_exceptions", [](py::dict classes) {
    ExceptionClasses().clear();
    for (auto [code, cls] : classes) ExceptionClasses()[code] = cls;
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      SetError(e);
    }
  });

  py::class_<WriteBatch>(m, "WriteBatch",
                         "Puts and deletes that Table.write applies in "
                         "order, all or nothing.")
      .def(py::init<>())
      .def(
          "put",
          [](WriteBatch& b, py::handle key, py::handle value) {
            std::optional<py::buffer_info> holder;
            b.Put(KeyOf(key), BytesOf(value, &holder, "value"));
          },
          py::arg("key"), py::arg("value"))
      .def(
          "delete", [](WriteBatch& b, py::handle key) { b.Delete(KeyOf(key)); },
          py::arg("key"))
      .def("clear", &WriteBatch::Clear)
      .def("__len__", &WriteBatch::Count);

  py::class_<PyIterator>(m, "_Iterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyIterator::Next);

  py::class_<PyTable> table_class(m, "Table", py::dynamic_attr());
  table_class
      .def(py::init<const std::string&, bool, bool, bool,
                    std::optional<uint32_t>, std::optional<uint64_t>,
                    std::optional<double>, std::optional<uint64_t>,
                    std::optional<uint32_t>, std::optional<uint64_t>,
                    std::optional<uint64_t>, std::optional<uint64_t>,
                    std::optional<uint64_t>, std::optional<uint64_t>,
                    const std::string&, bool, bool, bool, py::object>(),
           py::arg("path"), py::kw_only(), py::arg("create") = true,
           py::arg("read_only") = false, py::arg("error_if_exists") = false,
           py::arg("block_size") = py::none(), py::arg("s0") = py::none(),
           py::arg("epsilon") = py::none(), py::arg("hash_seed") = py::none(),
           py::arg("block_records") = py::none(),
           py::arg("block_cache_bytes") = py::none(),
           py::arg("checkpoint_bytes") = py::none(),
           py::arg("write_buffer_bytes") = py::none(),
           py::arg("value_checkpoint_bytes") = py::none(),
           py::arg("memory_bytes") = py::none(),
           py::arg("backend") = "auto", py::arg("direct_io") = false,
           py::arg("paranoid_checks") = false, py::arg("sync") = false,
           py::arg("_error_class") = py::none())
      .def("__delitem__", &PyTable::DelItem)
      .def("__len__", &PyTable::Count)
      .def("delete", &PyTable::Delete, py::arg("key"), py::kw_only(),
           py::arg("sync") = false)
      .def("multi_get", &PyTable::MultiGet, py::arg("keys"))
      .def("write", &PyTable::Write, py::arg("batch"), py::kw_only(),
           py::arg("sync") = false)
      .def("count", &PyTable::Count)
      .def("__iter__", Walk(PyIterator::Kind::kKeys))
      .def("keys", Walk(PyIterator::Kind::kKeys))
      .def("values", Walk(PyIterator::Kind::kValues))
      .def("items", Walk(PyIterator::Kind::kItems))
      .def("sync",
           [](PyTable& t) { t.Released([](Table& x) { return x.Sync(); }); })
      .def("flush",
           [](PyTable& t) { t.Released([](Table& x) { return x.Flush(); }); })
      .def("checkpoint",
           [](PyTable& t) {
             t.Released([](Table& x) { return x.Checkpoint(); });
           })
      .def("check",
           [](PyTable& t) { t.Released([](Table& x) { return x.Check(); }); })
      .def(
          "reserve",
          [](PyTable& t, uint64_t records, size_t key_bytes,
             size_t value_bytes) {
            t.Released([&](Table& x) {
              return x.Reserve(records, key_bytes, value_bytes);
            });
          },
          py::arg("records"), py::arg("key_bytes"), py::arg("value_bytes"),
          "Takes the buckets for `records` records of about key_bytes and "
          "value_bytes each at once, and keeps at least that many; "
          "reserve(0, 0, 0) lifts the floor.")
      .def(
          "backup",
          [](PyTable& t, const std::string& path) {
            t.Released([&](Table& x) { return x.Backup(path); });
          },
          py::arg("path"),
          "Writes a consistent copy of the table, as of this call, to the "
          "directory path, which opens as a table of its own; reads and "
          "writes from other threads go on meanwhile.")
      .def("close", &PyTable::Close)
      .def("stats", [](PyTable& t) { return StatsDict(t.table().GetStats()); })
      .def_property_readonly("closed", &PyTable::closed)
      .def_property_readonly("path", &PyTable::path)
      .def_property_readonly(
          "max_key_bytes", [](PyTable& t) { return t.table().max_key_bytes(); })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyTable& t, py::handle, py::handle, py::handle) {
        t.Close();
        return false;
      });
  DefineFastMethods(table_class);

  m.def(
      "destroy",
      [](const std::string& path) {
        absl::Status s;
        {
          py::gil_scoped_release release;
          s = DestroyTable(path);
        }
        Raise(s);
      },
      py::arg("path"), "Removes the table at path: its files and directory.");

  DefinePlacement(m);
}
