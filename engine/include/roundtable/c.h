/* roundtable's C API: the table (roundtable/table.h) behind opaque handles,
 * for C programs and for bindings of other languages.
 *
 * Errors. Every call that can fail returns an rt_code: RT_OK (0), or the
 * code of the C++ API's status (RT_NOT_FOUND for an absent key,
 * RT_INVALID_ARGUMENT for a bad option or an oversize key,
 * RT_FAILED_PRECONDITION for a closed, read-only or locked table,
 * RT_DATA_LOSS for a damaged block, ...). Such a call takes `char** errmsg`
 * last: when it is not NULL and the call fails, *errmsg is set to a
 * NUL-terminated message that the caller frees with rt_free (a message it
 * held before is freed first, so a loop may pass the same variable,
 * initialised to NULL). On success *errmsg is left as it is.
 *
 * Keys and values are byte strings with lengths, not NUL-terminated.
 *
 * Thread-safety: as the C++ API. One rt_table may be used from any number
 * of threads; an rt_options, rt_writeoptions, rt_writebatch or rt_iterator
 * from one thread at a time.
 */
#ifndef ROUNDTABLE_C_H_
#define ROUNDTABLE_C_H_

#include <stddef.h>
#include <stdint.h>

#include "roundtable/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_table rt_table;
typedef struct rt_options rt_options;
typedef struct rt_writeoptions rt_writeoptions;
typedef struct rt_writebatch rt_writebatch;
typedef struct rt_iterator rt_iterator;

/* The status codes (those of absl::StatusCode). */
typedef enum rt_code {
  RT_OK = 0,
  RT_CANCELLED = 1,
  RT_UNKNOWN = 2,
  RT_INVALID_ARGUMENT = 3,
  RT_DEADLINE_EXCEEDED = 4,
  RT_NOT_FOUND = 5,
  RT_ALREADY_EXISTS = 6,
  RT_PERMISSION_DENIED = 7,
  RT_RESOURCE_EXHAUSTED = 8,
  RT_FAILED_PRECONDITION = 9,
  RT_ABORTED = 10,
  RT_OUT_OF_RANGE = 11,
  RT_UNIMPLEMENTED = 12,
  RT_INTERNAL = 13,
  RT_UNAVAILABLE = 14,
  RT_DATA_LOSS = 15,
  RT_UNAUTHENTICATED = 16
} rt_code;

/* The I/O backends (Options::backend). */
typedef enum rt_backend {
  RT_BACKEND_AUTO = 0,
  RT_BACKEND_URING = 1,
  RT_BACKEND_POSIX = 2,
  RT_BACKEND_MEMORY = 3,
  RT_BACKEND_MMAP = 4
} rt_backend;

/* The library's version, "MAJOR.MINOR.PATCH". */
ROUNDTABLE_EXPORT const char* rt_version(void);
/* The name of a code ("NOT_FOUND"), never NULL. */
ROUNDTABLE_EXPORT const char* rt_code_name(int code);
/* Frees a message or a value the API returned. NULL is ignored. */
ROUNDTABLE_EXPORT void rt_free(void* p);

/* Options (roundtable/options.h). The layout (block size, s0, epsilon,
 * hash seed, record limit) is taken when a table is created; an existing
 * table opens with its stored layout, and a layout field set here must
 * match it (else RT_INVALID_ARGUMENT naming both). */
ROUNDTABLE_EXPORT rt_options* rt_options_create(void);
ROUNDTABLE_EXPORT void rt_options_destroy(rt_options* options);
ROUNDTABLE_EXPORT void rt_options_set_block_size(rt_options* o, uint32_t bytes);
ROUNDTABLE_EXPORT void rt_options_set_s0(rt_options* o, uint64_t s0);
ROUNDTABLE_EXPORT void rt_options_set_epsilon(rt_options* o, double epsilon);
ROUNDTABLE_EXPORT void rt_options_set_hash_seed(rt_options* o, uint64_t seed);
ROUNDTABLE_EXPORT void rt_options_set_block_records(rt_options* o,
                                                    uint32_t records);
ROUNDTABLE_EXPORT void rt_options_set_block_cache_bytes(rt_options* o,
                                                        uint64_t bytes);
ROUNDTABLE_EXPORT void rt_options_set_checkpoint_bytes(rt_options* o,
                                                       uint64_t bytes);
ROUNDTABLE_EXPORT void rt_options_set_write_buffer_bytes(rt_options* o,
                                                         uint64_t bytes);
ROUNDTABLE_EXPORT void rt_options_set_value_checkpoint_bytes(rt_options* o,
                                                             uint64_t bytes);
ROUNDTABLE_EXPORT void rt_options_set_memory_bytes(rt_options* o,
                                                   uint64_t bytes);
ROUNDTABLE_EXPORT void rt_options_set_backend(rt_options* o,
                                              rt_backend backend);
ROUNDTABLE_EXPORT void rt_options_set_direct_io(rt_options* o, int on);
ROUNDTABLE_EXPORT void rt_options_set_create_if_missing(rt_options* o, int on);
ROUNDTABLE_EXPORT void rt_options_set_error_if_exists(rt_options* o, int on);
ROUNDTABLE_EXPORT void rt_options_set_read_only(rt_options* o, int on);
ROUNDTABLE_EXPORT void rt_options_set_paranoid_checks(rt_options* o, int on);

/* Write options: NULL wherever one is taken means the defaults (no sync). */
ROUNDTABLE_EXPORT rt_writeoptions* rt_writeoptions_create(void);
ROUNDTABLE_EXPORT void rt_writeoptions_destroy(rt_writeoptions* options);
/* Sync the log before the write returns: it then survives power loss. */
ROUNDTABLE_EXPORT void rt_writeoptions_set_sync(rt_writeoptions* o, int on);

/* Opens (or creates) the table in directory `path`; on success *table is a
 * handle to release with rt_table_destroy. `options` NULL: the defaults.
 * Errors as Table::Open: RT_FAILED_PRECONDITION when another handle holds
 * the table's lock, RT_NOT_FOUND when missing and not to be created, ... */
ROUNDTABLE_EXPORT int rt_open(const rt_options* options, const char* path,
                              rt_table** table, char** errmsg);
/* Checkpoints and closes the table; later calls on the handle fail with
 * RT_FAILED_PRECONDITION. The handle stays to be destroyed. */
ROUNDTABLE_EXPORT int rt_close(rt_table* table, char** errmsg);
/* Releases the handle, closing the table first if it is open (ignoring
 * errors: call rt_close to see them). NULL is ignored. */
ROUNDTABLE_EXPORT void rt_table_destroy(rt_table* table);

/* The value of `key` into the caller's buffer: copies min(capacity, length)
 * bytes to `value` and sets *length to the value's whole length, so a
 * value longer than `capacity` is cut short and the caller can call again
 * with room for *length bytes. RT_NOT_FOUND for an absent key. */
ROUNDTABLE_EXPORT int rt_get(rt_table* table, const char* key, size_t keylen,
                             char* value, size_t capacity, size_t* length,
                             char** errmsg);
/* The value of `key` in a new buffer: *value (freed with rt_free; a
 * terminating NUL follows the bytes, not counted in *length). */
ROUNDTABLE_EXPORT int rt_get_alloc(rt_table* table, const char* key,
                                   size_t keylen, char** value, size_t* length,
                                   char** errmsg);
/* The values of n keys, their blocks read in one batch: for each i,
 * codes[i] is RT_OK with values[i] (freed with rt_free) and lengths[i], or
 * the key's error (RT_NOT_FOUND) with values[i] NULL. Returns RT_OK, or the
 * first key's error other than RT_NOT_FOUND. */
ROUNDTABLE_EXPORT int rt_multi_get(rt_table* table, size_t n,
                                   const char* const* keys,
                                   const size_t* keylens, char** values,
                                   size_t* lengths, int* codes, char** errmsg);
ROUNDTABLE_EXPORT int rt_put(rt_table* table, const rt_writeoptions* options,
                             const char* key, size_t keylen, const char* value,
                             size_t vallen, char** errmsg);
/* Removes `key`; an absent key is not an error. */
ROUNDTABLE_EXPORT int rt_delete(rt_table* table, const rt_writeoptions* options,
                                const char* key, size_t keylen, char** errmsg);

/* A batch of puts and deletes applied in order, all or nothing. */
ROUNDTABLE_EXPORT rt_writebatch* rt_writebatch_create(void);
ROUNDTABLE_EXPORT void rt_writebatch_destroy(rt_writebatch* batch);
ROUNDTABLE_EXPORT void rt_writebatch_put(rt_writebatch* batch, const char* key,
                                         size_t keylen, const char* value,
                                         size_t vallen);
ROUNDTABLE_EXPORT void rt_writebatch_delete(rt_writebatch* batch,
                                            const char* key, size_t keylen);
ROUNDTABLE_EXPORT void rt_writebatch_clear(rt_writebatch* batch);
ROUNDTABLE_EXPORT size_t rt_writebatch_count(const rt_writebatch* batch);
ROUNDTABLE_EXPORT int rt_write(rt_table* table, const rt_writeoptions* options,
                               const rt_writebatch* batch, char** errmsg);

/* Makes every write so far durable. */
ROUNDTABLE_EXPORT int rt_sync(rt_table* table, char** errmsg);
/* Applies the puts waiting in the write buffer to their blocks. */
ROUNDTABLE_EXPORT int rt_flush(rt_table* table, char** errmsg);
ROUNDTABLE_EXPORT int rt_checkpoint(rt_table* table, char** errmsg);
/* Reads every block and verifies the table (RT_DATA_LOSS naming a fault). */
ROUNDTABLE_EXPORT int rt_check(rt_table* table, char** errmsg);
/* Takes the buckets for `records` records of about `key_bytes` and
   `value_bytes` each at once, and keeps at least that many from then on
   (Table::Reserve); 0, 0, 0 lifts the floor. */
ROUNDTABLE_EXPORT int rt_reserve(rt_table* table, uint64_t records,
                                 size_t key_bytes, size_t value_bytes,
                                 char** errmsg);
/* A consistent copy of the table, as of this call, in the directory `dir`
   (Table::Backup): it opens as a table of its own; other threads' reads
   and writes go on meanwhile. RT_ALREADY_EXISTS when `dir` holds a table. */
ROUNDTABLE_EXPORT int rt_backup(rt_table* table, const char* dir,
                                char** errmsg);
/* The exact number of records (Table::Count). */
ROUNDTABLE_EXPORT int rt_count(rt_table* table, uint64_t* count,
                               char** errmsg);
/* The longest key that takes a value of any size. */
ROUNDTABLE_EXPORT size_t rt_max_key_bytes(rt_table* table);

/* A summary of TableStats (roundtable/options.h), read from memory. */
typedef struct rt_stats {
  uint64_t buckets;
  uint64_t records;  /* in blocks and the stash: rt_count is exact */
  uint64_t stash_records;
  uint64_t buffered_records;
  uint64_t data_bytes;
  uint32_t block_size;
  uint32_t block_records;
  uint64_t s0;
  double epsilon;
  double utilization;
  uint64_t value_count;
  uint64_t value_bytes;
  uint64_t value_file_bytes;
  uint64_t value_free_bytes;
  uint64_t wal_bytes;
  uint64_t checkpoints;
  uint64_t cache_hits;
  uint64_t cache_misses;
  uint64_t block_reads;   /* the block file's physical ledger */
  uint64_t block_writes;
} rt_stats;
ROUNDTABLE_EXPORT void rt_get_stats(rt_table* table, rt_stats* stats);
/* Any counter of TableStats by its field's name ("buffered_deletes",
 * "cache_bytes", "stash_memory_bytes", ...), the ledgers' as
 * "logical.<field>" and "physical_<file>.<field>" ("logical.grows",
 * "physical_wal.bytes_written"), a flag as 0 or 1: RT_OK with *value, or
 * RT_INVALID_ARGUMENT naming an unknown name (*value unchanged). Counters
 * added to TableStats later come this way, rt_stats keeping its layout. */
ROUNDTABLE_EXPORT int rt_get_stat(rt_table* table, const char* name,
                                  uint64_t* value, char** errmsg);

/* A walk over every record (Iterator in roundtable/table.h). key() and
 * value() point into the iterator, valid until the next rt_iterator_next
 * or rt_iterator_destroy. */
ROUNDTABLE_EXPORT rt_iterator* rt_iterator_create(rt_table* table);
ROUNDTABLE_EXPORT void rt_iterator_destroy(rt_iterator* it);
ROUNDTABLE_EXPORT int rt_iterator_valid(const rt_iterator* it);
/* REQUIRES: rt_iterator_valid(it). */
ROUNDTABLE_EXPORT void rt_iterator_next(rt_iterator* it);
ROUNDTABLE_EXPORT const char* rt_iterator_key(const rt_iterator* it,
                                              size_t* length);
ROUNDTABLE_EXPORT const char* rt_iterator_value(const rt_iterator* it,
                                                size_t* length);
/* RT_OK, or the error that ended the walk early. */
ROUNDTABLE_EXPORT int rt_iterator_status(const rt_iterator* it, char** errmsg);

/* Removes the table's files and its directory (DestroyTable). */
ROUNDTABLE_EXPORT int rt_destroy(const char* path, char** errmsg);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* ROUNDTABLE_C_H_ */
