// ROUNDTABLE_EXPORT marks what the shared library exports: the public API
// and nothing else (the library is built with hidden visibility, and a
// version script keeps the symbols of the C++ library it instantiates
// local).
#ifndef ROUNDTABLE_EXPORT_H_
#define ROUNDTABLE_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define ROUNDTABLE_EXPORT __attribute__((visibility("default")))
#define ROUNDTABLE_HIDDEN __attribute__((visibility("hidden")))
#else
#define ROUNDTABLE_EXPORT
#define ROUNDTABLE_HIDDEN
#endif

#endif  // ROUNDTABLE_EXPORT_H_
