// What the Python binding's files share (engine/python/): statuses as
// Python exceptions (the classes __init__.py hands to _set_exceptions),
// and keys and values from Python objects.
//
// Thread-safety: called with the GIL held.
#ifndef ROUNDTABLE_ENGINE_PYTHON_BINDINGS_H_
#define ROUNDTABLE_ENGINE_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roundtable::python {

namespace py = pybind11;

// The exception class of each status code, set by __init__.py; a code it
// does not name raises the class of UNKNOWN (roundtable.Error).
inline py::dict& ExceptionClasses() {
  static py::dict* classes = new py::dict();
  return *classes;
}

// A status as a C++ exception, translated to its Python class, or to
// `cls` when it is set.
struct StatusError {
  absl::Status status;
  py::object cls;
};

inline void Raise(absl::Status status) {
  if (!status.ok()) throw StatusError{std::move(status), py::object()};
}

template <typename T>
T ValueOr(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

// The bytes of a key or value argument; `holder` keeps a buffer's view
// alive while the bytes are used.
inline std::string_view BytesOf(py::handle h,
                                std::optional<py::buffer_info>* holder,
                                const char* what) {
  PyObject* o = h.ptr();
  if (PyBytes_Check(o)) {
    return {PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o))};
  }
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o, &n);
    if (p == nullptr) throw py::error_already_set();
    return {p, static_cast<size_t>(n)};
  }
  if (holder != nullptr && PyObject_CheckBuffer(o)) {
    holder->emplace(py::reinterpret_borrow<py::buffer>(h).request());
    const py::buffer_info& b = **holder;
    if (b.ndim > 1 || (b.ndim == 1 && b.strides[0] != b.itemsize)) {
      throw py::type_error(std::string(what) + " must be a contiguous buffer");
    }
    return {static_cast<const char*>(b.ptr),
            static_cast<size_t>(b.size * b.itemsize)};
  }
  throw py::type_error(std::string(what) + " must be bytes or str, not " +
                       std::string(py::str(h.get_type().attr("__name__"))));
}

inline std::string_view KeyOf(py::handle h) {
  return BytesOf(h, nullptr, "key");
}

// KeyError(key), as a dict raises it.
[[noreturn]] inline void RaiseKeyError(py::handle key) {
  PyErr_SetObject(PyExc_KeyError, key.ptr());
  throw py::error_already_set();
}

inline py::bytes ToBytes(std::string_view s) {
  return py::reinterpret_steal<py::bytes>(
      PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size())));
}

// Sets the Python error of a status: its table's error class, or the class
// of its code, or roundtable.Error (UNKNOWN's).
inline void SetError(const StatusError& e) {
  py::dict& classes = ExceptionClasses();
  const py::int_ code(static_cast<int>(e.status.code()));
  py::object cls = e.cls                    ? e.cls
                   : classes.contains(code) ? classes[code]
                   : classes.contains(py::int_(2))
                       ? classes[py::int_(2)]
                       : py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  const absl::string_view message = e.status.message();
  PyErr_SetObject(cls.ptr(), py::str(message.data(), message.size()).ptr());
}

// Defines the submodule roundtable.placement (placement.cc).
void DefinePlacement(py::module_& m);

}  // namespace roundtable::python

#endif  // ROUNDTABLE_ENGINE_PYTHON_BINDINGS_H_
