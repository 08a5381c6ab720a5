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
#ifndef ROUNDTABLE_TABLE_H_
#define ROUNDTABLE_TABLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/export.h"
#include "roundtable/options.h"
#include "roundtable/version.h"

namespace roundtable {

// Puts and deletes applied by Table::Write in order, all or nothing: every
// record is checked before anything is applied, so a bad record refuses the
// whole batch with nothing written.
class ROUNDTABLE_EXPORT WriteBatch {
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
class ROUNDTABLE_EXPORT Iterator {
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

// Called as Check reads the blocks: buckets checked so far, of m.
using CheckProgress = std::function<void(uint64_t buckets, uint64_t of)>;

// Called as a rebuild or salvage copies: the records and their key and value
// bytes so far.
using RebuildProgress = std::function<void(uint64_t records, uint64_t bytes)>;

// What SalvageTable saved and lost.
struct SalvageReport {
  uint64_t saved = 0;           // records in the new table
  uint64_t damaged_blocks = 0;  // bucket blocks that failed their checksums
  // Records of the damaged blocks: the table's count of records in blocks
  // and the stash, less those read from them (a buffered put of one of
  // their keys is saved, and the record it replaced counted here). 0 when
  // no superblock held the count (layout_known false).
  uint64_t lost = 0;
  // Records read whose out-of-line value failed its checksum: lost too.
  uint64_t lost_values = 0;
  // Whether the table opened (read-only). If not, its files were read one
  // by one, and the figures below say what of them held up.
  bool opened = true;
  // False when neither superblock was valid: the block size was found
  // from the blocks, the other layout fields (s0, epsilon, hash seed) of
  // the new table are the defaults, and the bucket count is the block
  // file's.
  bool layout_known = true;
  // Blocks of the stash copy and of the write buffer's copy that failed
  // their checksums: the changes they held are lost.
  uint64_t damaged_copy_blocks = 0;
  // Log records read (when not opened: each file up to its first damaged
  // record).
  uint64_t log_records = 0;
};

class ROUNDTABLE_EXPORT Table {
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
  // An existing table needs no layout in `options`: the fields left unset
  // take the stored values (a new table takes their defaults).
  static absl::StatusOr<std::unique_ptr<Table>> Open(const Options& options,
                                                     const std::string& path);

  // The layout stored in the table at `path` (block size, record limit, s0,
  // epsilon, hash seed) set in Options whose other fields are at their
  // defaults, read without opening the table (no lock taken). NotFound when
  // there is no table; DataLoss or FailedPrecondition as Open.
  static absl::StatusOr<Options> ReadLayout(const std::string& path);

  // Closes the table if Close was not called, ignoring errors.
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // The value of `key`, or NotFound. Reads at most one block (none when the
  // key is in the stash), and for a value stored out of line one extent of
  // the value file; DataLoss, naming the key's bucket, when that block or
  // extent fails its checksum.
  absl::StatusOr<std::string> Get(std::string_view key);
  // The same, assigning the value to *value (which keeps its capacity, so a
  // loop that reuses one string allocates nothing); *value is unspecified
  // when the status is not OK.
  absl::Status Get(std::string_view key, std::string* value);

  // Inserts or replaces. Reads and writes the key's block once; may first
  // add a bucket (one distribute: z block reads, z + 1 writes). A value of
  // any size up to 4 GiB - 1 bytes: a record larger than
  // max_record_bytes() keeps its value out of line, written once to an
  // extent of the value file before the write is logged, and a 32-byte
  // reference in the block (docs/table.md, "Values of any size").
  // InvalidArgument, with nothing written, for a key longer than
  // max_key_bytes() whose value does not fit inline beside it, or a larger
  // value. FailedPrecondition on a read-only or closed table.
  absl::Status Put(std::string_view key, std::string_view value,
                   const WriteOptions& options = {});

  // Removes `key`; an absent key is not an error. Reads and writes the key's
  // block once (nothing when the key is in the stash), or, where a put
  // would, waits in the write buffer, reading nothing (Options::
  // write_buffer_bytes); may then release a bucket (one distribute
  // backwards).
  absl::Status Delete(std::string_view key, const WriteOptions& options = {});

  // Applies the batch's puts and deletes in order. Every record is checked
  // first: one Put would refuse refuses the batch with InvalidArgument and
  // nothing is written. The batch is one log record: after a crash it is wholly
  // there or wholly absent.
  absl::Status Write(const WriteBatch& batch, const WriteOptions& options = {});

  // The values of `keys`, in order (NotFound for absent ones). The blocks
  // of all keys not in the stash are read in one batch submission, each
  // distinct block once; then the extents of the values stored out of line
  // in one more.
  std::vector<absl::StatusOr<std::string>> MultiGet(
      std::span<const std::string_view> keys);

  // Reads the blocks of `keys` that no memory holds (not the write buffer,
  // the stash, the held blocks or the cache) into the block cache, each
  // distinct block once, all in one batch submission, so that the Gets of
  // those keys that follow find them in memory: a server does this ahead
  // of a pipeline of Gets. A hint: nothing without a block cache, or for
  // fewer than two blocks; a block that fails to read is left to the Get
  // that needs it, which reports the error.
  void Preload(std::span<const std::string_view> keys);

  // A walk over every record; see Iterator.
  std::unique_ptr<Iterator> NewIterator();

  // One step of a walk over the keys in the order of their hashes, resumed
  // from a cursor across calls with any writes between them (Redis's
  // SCAN). A walk starts at cursor 0. Each call appends to *keys the keys
  // of whole buckets, from the one whose hashes hold `cursor` on (of that
  // one, the keys hashing to `cursor` or past it), until it has appended
  // `count` keys or read `count` buckets (at least one), and returns the
  // cursor to go on from: 0 once the walk has passed the last hash. A key
  // in the table from the walk's first call to its last is given exactly
  // once, however the table grew or shrank in between; one written or
  // deleted during the walk may be given or not. Any value is a cursor (the
  // hash a step starts from). Reads a block per bucket (none for one in
  // memory) and no value. FailedPrecondition on a closed table; DataLoss
  // as Get.
  absl::StatusOr<uint64_t> Scan(uint64_t cursor, size_t count,
                                std::vector<std::string>* keys);

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

  // Writes the held blocks, the stash and write buffer copies and the next
  // superblock through the journal and in place, synced, then empties the
  // log: what Open reads next needs no replay. (The checkpoints a write
  // starts by itself leave the in-place sync to the next checkpoint, Sync
  // or Close: docs/durability.md.)
  absl::Status Checkpoint();

  // Tells the table how many records to expect, of about `key_bytes` and
  // `value_bytes` each: it takes the buckets they need at once, so that
  // filling it adds none (no distribute per few dozen inserts), and keeps
  // at least that many from then on, across reopens (deletes shrink it no
  // further). An empty table takes them as empty blocks written straight
  // to its block file, in one sequential pass; one with records grows
  // bucket by bucket. Reserve(0, 0, 0) lifts the floor (the table shrinks
  // as its data allows). Checkpoints (completely) when it added buckets;
  // a floor alone reaches the file at the next checkpoint.
  // FailedPrecondition on a read-only or closed table.
  absl::Status Reserve(uint64_t records, size_t key_bytes,
                       size_t value_bytes);

  // Writes a copy of the table, as of one moment, to directory `dir` (made
  // if missing; AlreadyExists when it holds a table), which opens as a
  // table of its own: it holds every write acknowledged before Backup was
  // called and none begun after it returned. The moment is a complete
  // checkpoint, under the writer lock; then, with the lock released, the
  // files it left (block file, stash and buffer copies, value file and its
  // map) are copied (copy_file_range, which shares extents on file systems
  // with reflinks; never hard links, as the next checkpoint rewrites them
  // in place) while readers and writers go on. Meanwhile no checkpoint
  // writes in place: the log and the held blocks grow until the copy ends,
  // and Checkpoint and Close wait for it. One file read and written per
  // file of the table. FailedPrecondition on a read-only, closed or
  // in-memory table, which makes no directory.
  absl::Status Backup(const std::string& dir);

  // Compacts the stash copy, checkpoints, and releases the files. Later
  // calls fail with FailedPrecondition.
  absl::Status Close();

  // Where `key` lives: its hash, bucket and block, whether it is in its
  // block, the stash or the write buffer (or absent), and where a value
  // stored out of line lies. Reads the key's block at most (as Get, but no
  // extent). DataLoss as Get; FailedPrecondition on a closed table.
  absl::StatusOr<KeyLocation> Locate(std::string_view key);

  // Counters, sizes and ledgers, read from memory (no I/O). Its `records`
  // leaves out the puts still waiting in the write buffer: Count() is
  // exact.
  TableStats GetStats() const;

  // The exact number of records: those in blocks and the stash, plus the
  // buffered puts (TableStats::buffered_records) whose keys are not stored
  // yet, less the buffered deletes whose keys are. Costs a lookup of each
  // buffered key: the block of its bucket is read unless it is in memory
  // (held or cached), so up to one block read per buffered record;
  // nothing more without a write buffer.
  // FailedPrecondition on a closed table; DataLoss as Get.
  absl::StatusOr<uint64_t> Count();

  // Reads every block and verifies the table: the checksum of every block
  // read from the device (a cached block was verified when it was read, or
  // was written here), every record in the block (or stash list) of its own
  // bucket, no key twice, a stash list only where its block has no room for
  // any of its records, the record and byte counts, and
  // ceil(data / ((1 - epsilon) * block space)) <= m <= that + 1 with
  // m >= s0. OK, or DataLoss naming the first fault. Reads the whole block
  // file: for tests and `roundtable check` (which opens with an empty cache,
  // so every checksum is verified).
  // `progress`, when given, is called every 256 buckets with the buckets
  // checked so far and m.
  absl::Status Check(const CheckProgress& progress = nullptr);

  // The largest encoded record a block takes (key and value with their
  // length prefixes and the record's 4-byte directory slot): a quarter of
  // the block's record space. A larger record's value goes out of line.
  size_t max_record_bytes() const;
  // The longest key that takes a value of any size (beside a reference in
  // its block): 977 bytes for 4 KiB blocks, 82 for 512-byte ones. A longer
  // key takes only a value that fits inline beside it.
  size_t max_key_bytes() const;

  class Impl;

 private:
  friend absl::StatusOr<SalvageReport> SalvageTable(
      const std::string& damaged, const std::string& path,
      const RebuildProgress& progress);
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
// 1024 records a block. A value stored out of line counts as its 32-byte
// reference.
ROUNDTABLE_EXPORT uint64_t SuggestedS0(uint32_t block_size, size_t key_bytes,
                                       size_t value_bytes);

// Rebuilds the table at `path` into a new layout: each layout field that
// `layout` sets (block_size, s0, epsilon, hash_seed, block_records) replaces
// the stored one, the others stay; its block_cache_bytes,
// write_buffer_bytes and checkpoint_bytes are used while copying. Opens
// the table to write (FailedPrecondition while another handle has it),
// copies every record into a new table built at RebuildScratchPath(path),
// checkpoints and syncs it, then exchanges the two directories in one
// rename (renameat2 RENAME_EXCHANGE; FailedPrecondition on a file system
// without it) and removes the old one. A crash at any point leaves at
// `path` the old table or the new one, whole; the scratch directory it may
// leave is removed by the next rebuild. Also how a table gives back the
// space of a long history (its value file never shrinks otherwise). Reads
// the whole table and writes it once more.
ROUNDTABLE_EXPORT absl::Status RebuildTable(
    const std::string& path, const Options& layout,
    const RebuildProgress& progress = nullptr);
// Copies every record of the damaged table at `damaged` that can be read
// into a new table at `path` of the same layout: the records of every
// block that passes its checksum, every stash record, every put waiting
// in the write buffer and every write of the log (the table is opened
// read-only, with the log replayed in memory: nothing of it is written).
// When it cannot be opened (both superblocks, the stash copy, the write
// buffer's copy or the log damaged: DataLoss), its files are read one by
// one: each block that passes its checksum, the blocks of the two copies
// that do, each log file up to its first damaged record, applied oldest
// first so that the newest copy of a key wins (SalvageReport says what
// held up). A record whose out-of-line value fails its checksum is lost
// and counted. AlreadyExists when `path` holds a table; DataLoss when no
// block of `damaged` is whole enough to give its block size.
ROUNDTABLE_EXPORT absl::StatusOr<SalvageReport> SalvageTable(
    const std::string& damaged, const std::string& path,
    const RebuildProgress& progress = nullptr);

// Where RebuildTable builds the new table: `path` + ".rebuild".
ROUNDTABLE_EXPORT std::string RebuildScratchPath(const std::string& path);

// Removes the table's files and its directory (if then empty), under the
// writer's lock (FailedPrecondition while a handle has the table open). OK
// when nothing is there.
ROUNDTABLE_EXPORT absl::Status DestroyTable(const std::string& path);

}  // namespace roundtable

#endif  // ROUNDTABLE_TABLE_H_
