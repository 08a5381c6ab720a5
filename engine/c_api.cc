// The C API (roundtable/c.h) over the C++ one: each handle owns the C++
// object, and every status becomes a code and, when asked, a message.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/c.h"
#include "roundtable/table.h"
#include "roundtable/version.h"

using roundtable::Backend;
using roundtable::Iterator;
using roundtable::Options;
using roundtable::Table;
using roundtable::TableStats;
using roundtable::WriteBatch;
using roundtable::WriteOptions;

struct rt_table {
  std::unique_ptr<Table> table;
};
struct rt_options {
  Options options;
};
struct rt_writeoptions {
  WriteOptions options;
};
struct rt_writebatch {
  WriteBatch batch;
};
struct rt_iterator {
  std::unique_ptr<Iterator> it;
};

namespace {

// A malloc'd copy of `bytes` with a NUL after them.
char* CopyOut(std::string_view bytes) {
  char* p = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (p == nullptr) return nullptr;
  std::memcpy(p, bytes.data(), bytes.size());
  p[bytes.size()] = '\0';
  return p;
}

// The status's code, with its message in *errmsg when asked.
int Report(const absl::Status& status, char** errmsg) {
  if (status.ok()) return RT_OK;
  if (errmsg != nullptr) {
    std::free(*errmsg);
    const absl::string_view message = status.message();
    *errmsg = CopyOut(std::string_view(message.data(), message.size()));
  }
  return static_cast<int>(status.code());
}

const WriteOptions& WriteOptionsOf(const rt_writeoptions* o) {
  static const WriteOptions kDefaults;
  return o == nullptr ? kDefaults : o->options;
}

std::string_view Bytes(const char* p, size_t n) {
  return n == 0 ? std::string_view() : std::string_view(p, n);
}

// TableStats' counters by their fields' names: the table's own, then the
// ledgers' under their field's name and a dot.
template <typename T>
using Counters = std::pair<const char*, uint64_t T::*>;
constexpr Counters<TableStats> kCounters[] = {
    {"buckets", &TableStats::buckets},
    {"min_buckets", &TableStats::min_buckets},
    {"records", &TableStats::records},
    {"stash_records", &TableStats::stash_records},
    {"stash_bytes", &TableStats::stash_bytes},
    {"buffered_records", &TableStats::buffered_records},
    {"buffered_deletes", &TableStats::buffered_deletes},
    {"buffered_bytes", &TableStats::buffered_bytes},
    {"data_bytes", &TableStats::data_bytes},
    {"s0", &TableStats::s0},
    {"cache_hits", &TableStats::cache_hits},
    {"held_hits", &TableStats::held_hits},
    {"cache_misses", &TableStats::cache_misses},
    {"cache_bytes", &TableStats::cache_bytes},
    {"stash_memory_bytes", &TableStats::stash_memory_bytes},
    {"bucket_memory_bytes", &TableStats::bucket_memory_bytes},
    {"held_blocks", &TableStats::held_blocks},
    {"unwritten_blocks", &TableStats::unwritten_blocks},
    {"written_ahead", &TableStats::written_ahead},
    {"value_count", &TableStats::value_count},
    {"value_bytes", &TableStats::value_bytes},
    {"value_file_bytes", &TableStats::value_file_bytes},
    {"value_free_bytes", &TableStats::value_free_bytes},
    {"wal_bytes", &TableStats::wal_bytes},
    {"checkpoints", &TableStats::checkpoints},
    {"recovered_records", &TableStats::recovered_records},
    {"recovery_ns", &TableStats::recovery_ns},
};
constexpr Counters<roundtable::LogicalLedger> kLogical[] = {
    {"get_reads", &roundtable::LogicalLedger::get_reads},
    {"put_reads", &roundtable::LogicalLedger::put_reads},
    {"put_writes", &roundtable::LogicalLedger::put_writes},
    {"delete_reads", &roundtable::LogicalLedger::delete_reads},
    {"delete_writes", &roundtable::LogicalLedger::delete_writes},
    {"grow_reads", &roundtable::LogicalLedger::grow_reads},
    {"grow_writes", &roundtable::LogicalLedger::grow_writes},
    {"shrink_reads", &roundtable::LogicalLedger::shrink_reads},
    {"shrink_writes", &roundtable::LogicalLedger::shrink_writes},
    {"stash_copy_writes", &roundtable::LogicalLedger::stash_copy_writes},
    {"buffer_drains", &roundtable::LogicalLedger::buffer_drains},
    {"distribute_drains", &roundtable::LogicalLedger::distribute_drains},
    {"grows", &roundtable::LogicalLedger::grows},
    {"shrinks", &roundtable::LogicalLedger::shrinks},
};
constexpr std::pair<const char*, roundtable::IoStats TableStats::*>
    kFiles[] = {
        {"physical_blocks", &TableStats::physical_blocks},
        {"physical_stash", &TableStats::physical_stash},
        {"physical_wal", &TableStats::physical_wal},
        {"physical_journal", &TableStats::physical_journal},
        {"physical_buffer", &TableStats::physical_buffer},
        {"physical_values", &TableStats::physical_values},
        {"physical_spacemap", &TableStats::physical_spacemap},
        {"physical_blockmap", &TableStats::physical_blockmap},
};
constexpr Counters<roundtable::IoStats> kIo[] = {
    {"blocks_read", &roundtable::IoStats::blocks_read},
    {"bytes_read", &roundtable::IoStats::bytes_read},
    {"blocks_written", &roundtable::IoStats::blocks_written},
    {"bytes_written", &roundtable::IoStats::bytes_written},
    {"read_ops", &roundtable::IoStats::read_ops},
    {"write_ops", &roundtable::IoStats::write_ops},
    {"submissions", &roundtable::IoStats::submissions},
    {"syncs", &roundtable::IoStats::syncs},
    {"wait_ns", &roundtable::IoStats::wait_ns},
};

// The counter `name` of `of` in `counters`, if there is one.
template <typename T, size_t N>
std::optional<uint64_t> Find(const Counters<T> (&counters)[N], const T& of,
                             std::string_view name) {
  for (const auto& [field, member] : counters) {
    if (name == field) return of.*member;
  }
  return std::nullopt;
}

absl::StatusOr<uint64_t> StatByName(const TableStats& s,
                                    std::string_view name) {
  if (auto v = Find(kCounters, s, name)) return *v;
  if (name == "block_size") return s.block_size;
  if (name == "block_records") return s.block_records;
  if (name == "recovered_journal") return s.recovered_journal ? 1 : 0;
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos) {
    const std::string_view group = name.substr(0, dot);
    const std::string_view field = name.substr(dot + 1);
    if (group == "logical") {
      if (auto v = Find(kLogical, s.logical, field)) return *v;
    }
    for (const auto& [file, ledger] : kFiles) {
      if (group != file) continue;
      if (auto v = Find(kIo, s.*ledger, field)) return *v;
    }
  }
  return absl::InvalidArgumentError(
      "unknown statistic \"" + std::string(name) + "\"");
}

}  // namespace

extern "C" {

const char* rt_version(void) { return ROUNDTABLE_VERSION_STRING; }

const char* rt_code_name(int code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  if (code < 0 || code >= static_cast<int>(std::size(kNames))) {
    return "UNKNOWN";
  }
  return kNames[code];
}

void rt_free(void* p) { std::free(p); }

rt_options* rt_options_create(void) { return new rt_options; }
void rt_options_destroy(rt_options* o) { delete o; }
void rt_options_set_block_size(rt_options* o, uint32_t v) {
  o->options.block_size = v;
}
void rt_options_set_s0(rt_options* o, uint64_t v) { o->options.s0 = v; }
void rt_options_set_epsilon(rt_options* o, double v) { o->options.epsilon = v; }
void rt_options_set_hash_seed(rt_options* o, uint64_t v) {
  o->options.hash_seed = v;
}
void rt_options_set_block_records(rt_options* o, uint32_t v) {
  o->options.block_records = v;
}
void rt_options_set_block_cache_bytes(rt_options* o, uint64_t v) {
  o->options.block_cache_bytes = v;
}
void rt_options_set_checkpoint_bytes(rt_options* o, uint64_t v) {
  o->options.checkpoint_bytes = v;
}
void rt_options_set_write_buffer_bytes(rt_options* o, uint64_t v) {
  o->options.write_buffer_bytes = v;
}
void rt_options_set_memory_bytes(rt_options* o, uint64_t v) {
  o->options.memory_bytes = v;
}
void rt_options_set_value_checkpoint_bytes(rt_options* o, uint64_t v) {
  o->options.value_checkpoint_bytes = v;
}
void rt_options_set_backend(rt_options* o, rt_backend v) {
  o->options.backend = static_cast<Backend>(v);
}
void rt_options_set_direct_io(rt_options* o, int on) {
  o->options.direct_io = on != 0;
}
void rt_options_set_create_if_missing(rt_options* o, int on) {
  o->options.create_if_missing = on != 0;
}
void rt_options_set_error_if_exists(rt_options* o, int on) {
  o->options.error_if_exists = on != 0;
}
void rt_options_set_read_only(rt_options* o, int on) {
  o->options.read_only = on != 0;
}
void rt_options_set_paranoid_checks(rt_options* o, int on) {
  o->options.paranoid_checks = on != 0;
}

rt_writeoptions* rt_writeoptions_create(void) { return new rt_writeoptions; }
void rt_writeoptions_destroy(rt_writeoptions* o) { delete o; }
void rt_writeoptions_set_sync(rt_writeoptions* o, int on) {
  o->options.sync = on != 0;
}

int rt_open(const rt_options* options, const char* path, rt_table** table,
            char** errmsg) {
  *table = nullptr;
  if (options != nullptr &&
      (static_cast<int>(options->options.backend) < RT_BACKEND_AUTO ||
       static_cast<int>(options->options.backend) > RT_BACKEND_MMAP)) {
    return Report(absl::InvalidArgumentError("unknown backend"), errmsg);
  }
  auto opened = Table::Open(options ? options->options : Options(), path);
  if (!opened.ok()) return Report(opened.status(), errmsg);
  *table = new rt_table{*std::move(opened)};
  return RT_OK;
}

int rt_close(rt_table* t, char** errmsg) {
  return Report(t->table->Close(), errmsg);
}

void rt_table_destroy(rt_table* t) { delete t; }

int rt_get(rt_table* t, const char* key, size_t keylen, char* value,
           size_t capacity, size_t* length, char** errmsg) {
  std::string v;
  if (absl::Status s = t->table->Get(Bytes(key, keylen), &v); !s.ok()) {
    return Report(s, errmsg);
  }
  if (capacity > 0) std::memcpy(value, v.data(), std::min(capacity, v.size()));
  *length = v.size();
  return RT_OK;
}

int rt_get_alloc(rt_table* t, const char* key, size_t keylen, char** value,
                 size_t* length, char** errmsg) {
  *value = nullptr;
  std::string v;
  if (absl::Status s = t->table->Get(Bytes(key, keylen), &v); !s.ok()) {
    return Report(s, errmsg);
  }
  *value = CopyOut(v);
  if (*value == nullptr) {
    return Report(absl::ResourceExhaustedError("out of memory"), errmsg);
  }
  *length = v.size();
  return RT_OK;
}

int rt_multi_get(rt_table* t, size_t n, const char* const* keys,
                 const size_t* keylens, char** values, size_t* lengths,
                 int* codes, char** errmsg) {
  std::vector<std::string_view> views(n);
  for (size_t i = 0; i < n; ++i) views[i] = Bytes(keys[i], keylens[i]);
  std::vector<absl::StatusOr<std::string>> got = t->table->MultiGet(views);
  absl::Status first;
  for (size_t i = 0; i < n; ++i) {
    values[i] = nullptr;
    lengths[i] = 0;
    if (got[i].ok()) {
      values[i] = CopyOut(*got[i]);
      if (values[i] == nullptr)
        got[i] = absl::ResourceExhaustedError("out of memory");
    }
    codes[i] = static_cast<int>(got[i].status().code());
    if (got[i].ok()) {
      lengths[i] = got[i]->size();
    } else if (!absl::IsNotFound(got[i].status()) && first.ok()) {
      first = got[i].status();
    }
  }
  return Report(first, errmsg);
}

int rt_put(rt_table* t, const rt_writeoptions* options, const char* key,
           size_t keylen, const char* value, size_t vallen, char** errmsg) {
  return Report(t->table->Put(Bytes(key, keylen), Bytes(value, vallen),
                              WriteOptionsOf(options)),
                errmsg);
}

int rt_delete(rt_table* t, const rt_writeoptions* options, const char* key,
              size_t keylen, char** errmsg) {
  return Report(t->table->Delete(Bytes(key, keylen), WriteOptionsOf(options)),
                errmsg);
}

rt_writebatch* rt_writebatch_create(void) { return new rt_writebatch; }
void rt_writebatch_destroy(rt_writebatch* b) { delete b; }
void rt_writebatch_put(rt_writebatch* b, const char* key, size_t keylen,
                       const char* value, size_t vallen) {
  b->batch.Put(Bytes(key, keylen), Bytes(value, vallen));
}
void rt_writebatch_delete(rt_writebatch* b, const char* key, size_t keylen) {
  b->batch.Delete(Bytes(key, keylen));
}
void rt_writebatch_clear(rt_writebatch* b) { b->batch.Clear(); }
size_t rt_writebatch_count(const rt_writebatch* b) { return b->batch.Count(); }

int rt_write(rt_table* t, const rt_writeoptions* options,
             const rt_writebatch* batch, char** errmsg) {
  return Report(t->table->Write(batch->batch, WriteOptionsOf(options)), errmsg);
}

int rt_sync(rt_table* t, char** errmsg) {
  return Report(t->table->Sync(), errmsg);
}
int rt_flush(rt_table* t, char** errmsg) {
  return Report(t->table->Flush(), errmsg);
}
int rt_checkpoint(rt_table* t, char** errmsg) {
  return Report(t->table->Checkpoint(), errmsg);
}
int rt_check(rt_table* t, char** errmsg) {
  return Report(t->table->Check(), errmsg);
}
int rt_reserve(rt_table* t, uint64_t records, size_t key_bytes,
               size_t value_bytes, char** errmsg) {
  return Report(t->table->Reserve(records, key_bytes, value_bytes), errmsg);
}
int rt_backup(rt_table* t, const char* dir, char** errmsg) {
  return Report(t->table->Backup(dir), errmsg);
}
int rt_count(rt_table* t, uint64_t* count, char** errmsg) {
  absl::StatusOr<uint64_t> n = t->table->Count();
  if (!n.ok()) return Report(n.status(), errmsg);
  *count = *n;
  return RT_OK;
}
size_t rt_max_key_bytes(rt_table* t) { return t->table->max_key_bytes(); }

void rt_get_stats(rt_table* t, rt_stats* out) {
  const TableStats s = t->table->GetStats();
  *out = rt_stats{};
  out->buckets = s.buckets;
  out->records = s.records;
  out->stash_records = s.stash_records;
  out->buffered_records = s.buffered_records;
  out->data_bytes = s.data_bytes;
  out->block_size = s.block_size;
  out->block_records = s.block_records;
  out->s0 = s.s0;
  out->epsilon = s.epsilon;
  out->utilization = s.utilization;
  out->value_count = s.value_count;
  out->value_bytes = s.value_bytes;
  out->value_file_bytes = s.value_file_bytes;
  out->value_free_bytes = s.value_free_bytes;
  out->wal_bytes = s.wal_bytes;
  out->checkpoints = s.checkpoints;
  out->cache_hits = s.cache_hits;
  out->cache_misses = s.cache_misses;
  out->block_reads = s.physical_blocks.blocks_read;
  out->block_writes = s.physical_blocks.blocks_written;
}

int rt_get_stat(rt_table* t, const char* name, uint64_t* value,
                char** errmsg) {
  const absl::StatusOr<uint64_t> got =
      StatByName(t->table->GetStats(), name);
  if (got.ok()) *value = *got;
  return Report(got.status(), errmsg);
}

rt_iterator* rt_iterator_create(rt_table* t) {
  return new rt_iterator{t->table->NewIterator()};
}
void rt_iterator_destroy(rt_iterator* it) { delete it; }
int rt_iterator_valid(const rt_iterator* it) { return it->it->Valid() ? 1 : 0; }
void rt_iterator_next(rt_iterator* it) { it->it->Next(); }
const char* rt_iterator_key(const rt_iterator* it, size_t* length) {
  const std::string_view k = it->it->key();
  *length = k.size();
  return k.data();
}
const char* rt_iterator_value(const rt_iterator* it, size_t* length) {
  const std::string_view v = it->it->value();
  *length = v.size();
  return v.data();
}
int rt_iterator_status(const rt_iterator* it, char** errmsg) {
  return Report(it->it->status(), errmsg);
}

int rt_destroy(const char* path, char** errmsg) {
  return Report(roundtable::DestroyTable(path), errmsg);
}

}  // extern "C"
