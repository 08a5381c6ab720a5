// roundtable's public API: an embedded key-value table on fixed-size disk
// blocks. Every key lives in the block of its bucket (round-mapping of the
// key's XXH3 hash); the few records whose block is full wait in an in-RAM
// stash with a persistent copy; the table grows and shrinks one bucket at a
// time by distribute, never rehashing the whole file. docs/table.md explains
// the design, docs/format.md every byte on disk.
//
// Durability (docs/durability.md): every write is appended to a write-ahead
// log before Put, Delete or Write returns. A write survives a crash of the
// process once it returns OK; it survives power loss once it returns OK with
// WriteOptions::sync, or once a later Sync returns OK. A batch is atomic.
// After any crash, Open recovers by itself to a state that holds every
// durable write and is a prefix of the acknowledged history. A failed write
// or sync makes the table refuse further writes with that first error (reads
// go on); the write that failed may or may not be there after reopening.
//
// One writer: a table has at most one writable handle at a time, in any
// process, or any number of read-only ones (Options::read_only), never
// both: Open takes a lock on the table's LOCK file first, and a conflicting
// Open fails at once with FailedPrecondition (docs/durability.md).
//
// Thread-safety: a Table may be used from any number of threads. Reads (Get,
// GetStats) run concurrently with each other; writes (Put, Delete, Write,
// Checkpoint, Close) are serialised and exclude reads while they change the
// table. A synced write is applied first and then waits for the log's sync
// outside the writer lock: concurrent syncing writers share one sync (group
// commit), and other threads may read a synced write before it returns.
#ifndef ROUNDTABLE_ENGINE_TABLE_H_
#define ROUNDTABLE_ENGINE_TABLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/block_device.h"

namespace roundtable {

struct Options {
  // Layout, fixed at creation and checked on every open (a mismatch is
  // InvalidArgument naming the stored value).
  uint32_t block_size = 4096;  // bytes, a power of two from 512 to 65536
  // Round-mapping slack; also the fewest buckets. Each grow rewrites s0 to
  // 2 s0 - 1 blocks: for blocks of a few dozen records SuggestedS0 (below)
  // grows nearly twice as cheaply for about the same stash.
  uint64_t s0 = 32;
  double epsilon = 0.1;  // free fraction kept in the blocks, (0, 0.5]
  uint64_t hash_seed = 0x726f756e64746162;  // XXH3 seed of the keys
  // The most records a block holds; 0: as many as its bytes take. With a
  // limit the table also keeps the record count within (1 - epsilon) of
  // m * block_records, so a table of equal-sized records that fit the
  // bytes runs in the paper's model of blocks of exactly B keys (what
  // `roundtable experiment stash` measures).
  uint32_t block_records = 0;

  // Not part of the layout.
  // Bytes of the cache of clean blocks. 0: every block read goes to the
  // device (the paper's model).
  uint64_t block_cache_bytes = 8 << 20;
  // Blocks written since the last checkpoint stay in memory until the next
  // one (not in the cache: each block is either cached or held; the
  // checkpoint moves them into the cache). A checkpoint starts after a write
  // that takes the write-ahead log past this many bytes, or the held blocks
  // past this or block_cache_bytes, whichever is larger; and on Checkpoint
  // and Close. The log bounds recovery's replay; the held blocks may take
  // as much memory as the cache (or checkpoint_bytes) besides it, and the
  // last checkpoint's blocks stay in memory too until a thread of its own
  // has written them to the journal and in place (while the writers go on,
  // logging to the log's other file). While that thread still runs, the
  // next checkpoint waits until the log or the held blocks pass their
  // limit by a quarter, rather than have the writers wait. A checkpoint
  // writes every held block twice (journal, then in place), so
  // random updates spread over a large table cost far less when many land
  // on each block between checkpoints: a cache large enough for the table
  // lets the held blocks grow to the whole table.
  uint64_t checkpoint_bytes = 32 << 20;
  // A put whose block is not held (and whose key is not in the stash)
  // waits in the write buffer, reading nothing, where it would make a
  // block dirty for one record; a bucket whose buffered puts would fill its
  // block is drained at once. The buffer has a
  // copy in its own file, written at checkpoints as the stash copy is, so
  // that it outlives the log. While the buffer's records (their encoded
  // bytes and 32 bytes each besides: the record's entry in the buffer's
  // hash map, with its key hash, and its bucket) pass this, the puts of one bucket after another, in a sweep over the
  // buckets, are applied to their blocks: one block read and write for all
  // the puts a bucket gathered since the sweep last passed it, where each
  // put would read and write it once. Reads look in the buffer first.
  // Table::Flush applies them all. 0: no buffer, every put edits its block
  // at once. Ignored (no buffer) in memory.
  uint64_t write_buffer_bytes = 64 << 20;
  // kMemory: the table lives in memory only, with no files or directory
  // (the path is only a name) and no write-ahead log; Open always creates
  // it, and it is gone when closed. For experiments and tests.
  io::Backend backend = io::Backend::kAuto;
  bool direct_io = false;
  bool create_if_missing = true;
  bool error_if_exists = false;
  bool read_only = false;
  // Opens each of the table's four files as a block device; empty: with
  // io::OpenBlockDevice. Tests put a fault-injection layer here to cut the
  // power under a table (the superblock probe of Open and ReadLayout reads
  // the block file directly).
  std::function<absl::StatusOr<std::unique_ptr<io::BlockDevice>>(
      const std::string& path, const io::DeviceOptions& options)>
      open_file;
  // Debug mode: run Check() after every Put, Delete and Write, and fail the
  // operation with Check's DataLoss if an invariant broke. Reads the whole
  // table each time: for tests on small tables.
  bool paranoid_checks = false;
};

// The paper's I/O model: distinct table blocks read and written, as if there
// were no cache, by the operation that caused them.
struct LogicalLedger {
  uint64_t get_reads = 0;
  uint64_t put_reads = 0;
  uint64_t put_writes = 0;
  uint64_t delete_reads = 0;
  uint64_t delete_writes = 0;
  uint64_t grow_reads = 0;         // distribute after new_bucket(): z per grow
  uint64_t grow_writes = 0;        // z + 1 per grow
  uint64_t shrink_reads = 0;       // distribute after free_bucket(): z + 1
  uint64_t shrink_writes = 0;      // z per shrink
  uint64_t stash_copy_writes = 0;  // blocks of the persistent stash copy
  // Buckets whose buffered puts were applied together (Options::
  // write_buffer_bytes): one block read and write each, where the puts
  // count one each in put_reads and put_writes.
  uint64_t buffer_drains = 0;
  // Of those, buckets a grow or shrink had just rebuilt: their blocks were
  // in memory and written anyway, so the drain read and wrote nothing.
  uint64_t distribute_drains = 0;
  uint64_t grows = 0;
  uint64_t shrinks = 0;
};

struct WriteOptions {
  // Sync the write-ahead log before returning: the write then survives power
  // loss. Without it a write survives a crash of the process.
  bool sync = false;
};

struct TableStats {
  uint64_t buckets = 0;  // m
  uint64_t records = 0;
  uint64_t stash_records = 0;
  uint64_t stash_bytes = 0;
  // Puts waiting in the write buffer (Options::write_buffer_bytes), not
  // counted in `records` and `data_bytes` until they reach their blocks
  // (some of them replace a stored record).
  uint64_t buffered_records = 0;
  uint64_t buffered_bytes = 0;
  uint64_t data_bytes = 0;  // encoded bytes of all records in blocks or stash
  uint32_t block_size = 0;
  uint32_t block_records = 0;
  uint64_t s0 = 0;
  double epsilon = 0;
  // data_bytes over the record bytes the m blocks can hold; with a record
  // limit, the larger of that and records over m * block_records.
  double utilization = 0;
  LogicalLedger logical;
  uint64_t cache_hits = 0;  // block reads the cache answered
  // Block reads answered by a block held since the last checkpoint (held
  // blocks are kept out of the cache until the checkpoint moves them in).
  uint64_t held_hits = 0;
  uint64_t cache_misses = 0;  // block reads that went past the cache
  // Blocks of the block file, the stash copy and the write buffer's copy
  // written since the last checkpoint, held in memory until the next.
  uint64_t held_blocks = 0;
  uint64_t wal_bytes = 0;  // records in the write-ahead log
  uint64_t checkpoints = 0;
  // What Open found after a crash: log records replayed, whether a
  // checkpoint's journal was applied again, and how long recovery took.
  uint64_t recovered_records = 0;
  bool recovered_journal = false;
  uint64_t recovery_ns = 0;
  io::IoStats physical_blocks;   // the block file
  io::IoStats physical_stash;    // the stash copy
  io::IoStats physical_wal;      // the write-ahead log (both its files)
  io::IoStats physical_journal;  // the checkpoint journal
  io::IoStats physical_buffer;   // the write buffer's copy
};

// Puts and deletes applied by Table::Write in order, all or nothing: every
// record is checked before anything is applied, so a bad record refuses the
// whole batch with nothing written.
class WriteBatch {
 public:
  WriteBatch();
  void Put(std::string_view key, std::string_view value);
  void Delete(std::string_view key);
  void Clear();
  size_t Count() const { return count_; }

 private:
  friend class Table;
  // The batch as its write-ahead log record (docs/format.md): a count, then
  // each operation's kind, key and value. Table::Write logs it as it is.
  std::string rep_;
  size_t count_ = 0;
};

// An unordered, forward-only walk over the table's records: bucket by
// bucket, each bucket's block and then its stash list.
//
// With no writes during the walk it yields every live record exactly once.
// Writes may run meanwhile (the iterator holds no lock between steps): then
// each bucket is seen as it was when the walk reached it, so a record written
// or moved by a distribute during the walk may be missed or seen twice, and
// every record yielded was in the table at some point during the walk.
//
// Thread-safety: one iterator must not be used from two threads at once.
// REQUIRES: the table outlives the iterator.
class Iterator {
 public:
  virtual ~Iterator() = default;
  virtual bool Valid() const = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // OK, or the error that ended the walk early (a block failing its
  // checksum, a closed table).
  virtual absl::Status status() const = 0;
};

class Table {
 public:
  // Opens the table in directory `path`, creating it (and the directory)
  // when missing and options.create_if_missing. Locks the table first:
  // FailedPrecondition, naming the table and (for a writer) its process,
  // when a writer holds it, or, for a writable open, readers do. Read-only,
  // every file is opened read-only and nothing is created or changed (a
  // missing log or journal is empty), so read permission suffices. A
  // symbolic link or any other non-regular file in place of a table file
  // is InvalidArgument; a directory with table files but no table is
  // FailedPrecondition and is left as it is. AlreadyExists when it exists
  // and options.error_if_exists; NotFound when missing and not to be
  // created; InvalidArgument for bad options, a layout that differs from the
  // stored one, or a path that is not a directory; FailedPrecondition for a
  // table of another format version; DataLoss when the superblocks or the
  // stash copy fail their checksums. Reads the superblocks, the journal, the
  // stash copy and the write-ahead log, never the whole block file; after a
  // crash it replays the log (and, read-only, keeps the result in memory).
  static absl::StatusOr<std::unique_ptr<Table>> Open(const Options& options,
                                                     const std::string& path);

  // The layout stored in the table at `path` (block size, record limit, s0,
  // epsilon, hash seed), with the other fields at their defaults: what a
  // tool that did not create the table passes to Open. NotFound when there is
  // no table; DataLoss or FailedPrecondition as Open.
  static absl::StatusOr<Options> ReadLayout(const std::string& path);

  // Closes the table if Close was not called, ignoring errors.
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // The value of `key`, or NotFound. Reads at most one block (none when the
  // key is in the stash); DataLoss when that block fails its checksum.
  absl::StatusOr<std::string> Get(std::string_view key);
  // The same, assigning the value to *value (which keeps its capacity, so a
  // loop that reuses one string allocates nothing); *value is unspecified
  // when the status is not OK.
  absl::Status Get(std::string_view key, std::string* value);

  // Inserts or replaces. Reads and writes the key's block once; may first
  // add a bucket (one distribute: z block reads, z + 1 writes).
  // InvalidArgument, with nothing written, when the record is larger than
  // max_record_bytes(). FailedPrecondition on a read-only or closed table.
  absl::Status Put(std::string_view key, std::string_view value,
                   const WriteOptions& options = {});

  // Removes `key`; an absent key is not an error. Reads and writes the key's
  // block once (nothing when the key is in the stash); may then release a
  // bucket (one distribute backwards).
  absl::Status Delete(std::string_view key, const WriteOptions& options = {});

  // Applies the batch's puts and deletes in order. Every record is checked
  // first: an oversize one refuses the batch with InvalidArgument and nothing
  // is written. The batch is one log record: after a crash it is wholly there
  // or wholly absent.
  absl::Status Write(const WriteBatch& batch, const WriteOptions& options = {});

  // The values of `keys`, in order (NotFound for absent ones). The blocks
  // of all keys not in the stash are read in one batch submission, each
  // distinct block once.
  std::vector<absl::StatusOr<std::string>> MultiGet(
      std::span<const std::string_view> keys);

  // A walk over every record; see Iterator.
  std::unique_ptr<Iterator> NewIterator();

  // Makes every write so far durable (one sync of the write-ahead log).
  // Also completes a checkpoint left pending (its blocks synced in place,
  // the superblock written, the journal emptied of its block images): a
  // few more syncs once per checkpoint.
  absl::Status Sync();

  // Applies every put waiting in the write buffer to its block (one read
  // and write of each block that has any), checkpointing as the held blocks
  // grow: then `records` and `data_bytes` of GetStats count every record.
  // The buffer is logged like any write, so nothing needs this for
  // durability. FailedPrecondition on a read-only or closed table.
  absl::Status Flush();

  // Writes the held blocks, the stash copy and the next superblock through
  // the journal and in place, synced, then empties the log: what Open reads
  // next needs no replay. (The checkpoints a write starts by itself leave
  // the in-place sync to the next checkpoint, Sync or Close:
  // docs/durability.md.)
  absl::Status Checkpoint();

  // Compacts the stash copy, checkpoints, and releases the files. Later
  // calls fail with FailedPrecondition.
  absl::Status Close();

  TableStats GetStats() const;

  // Reads every block and verifies the table: the checksum of every block
  // read from the device (a cached block was verified when it was read, or
  // was written here), every record in the block (or stash list) of its own
  // bucket, no key twice, a stash list only where its block has no room for
  // any of its records, the record and byte counts, and
  // ceil(data / ((1 - epsilon) * block space)) <= m <= that + 1 with
  // m >= s0. OK, or DataLoss naming the first fault. Reads the whole block
  // file: for tests and `roundtable check` (which opens with an empty cache,
  // so every checksum is verified).
  absl::Status Check();

  // The largest encoded record a block takes (key and value with their
  // length prefixes and the record's 4-byte directory slot): a quarter of
  // the block's record space.
  size_t max_record_bytes() const;

  class Impl;

 private:
  explicit Table(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The slack s0 that suits a table whose records (key and value) are about
// `key_bytes` and `value_bytes` long in blocks of `block_size` bytes
// (docs/table.md, "Choosing s0"): the power of two at or below the square
// root of the records a block holds, within [4, 32]. A bucket's load varies
// by about 1/sqrt(records per block) by chance alone, and round-mapping's
// arcs differ in length by 1/s0; the stash follows the chance far more
// than the arcs, and every grow rewrites s0 to 2 s0 - 1 blocks. 4 for
// 16-byte keys and 100-byte values in 4 KiB blocks; 32 (the default) from
// 1024 records a block.
uint64_t SuggestedS0(uint32_t block_size, size_t key_bytes, size_t value_bytes);

// Removes the table's files and its directory (if then empty), under the
// writer's lock (FailedPrecondition while a handle has the table open). OK
// when nothing is there.
absl::Status DestroyTable(const std::string& path);

}  // namespace roundtable

#endif  // ROUNDTABLE_ENGINE_TABLE_H_
