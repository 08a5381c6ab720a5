// roundtable's options and statistics: how a table is laid out and run
// (Options, WriteOptions), and what it reports (TableStats, with the
// logical ledger of the paper's I/O model). Part of the public API, with
// roundtable/table.h, which includes it.
//
// Thread-safety: value types.
#ifndef ROUNDTABLE_OPTIONS_H_
#define ROUNDTABLE_OPTIONS_H_

#include <cstdint>
#include <optional>

#include "roundtable/io.h"

namespace roundtable {

struct Options {
  // Layout, fixed at creation and stored in the table. A field left unset
  // takes its default (kDefault...) when the table is created and the
  // stored value when an existing table is opened; a field set to a value
  // that differs from the stored one is InvalidArgument naming both.
  std::optional<uint32_t> block_size = {};  // bytes, a power of two, 512..65536
  // Round-mapping slack; also the fewest buckets. Each grow rewrites s0 to
  // 2 s0 - 1 blocks: for blocks of a few dozen records SuggestedS0 (below)
  // grows nearly twice as cheaply for about the same stash.
  std::optional<uint64_t> s0 = {};
  std::optional<double> epsilon = {};  // free fraction kept in blocks, (0, 0.5]
  std::optional<uint64_t> hash_seed = {};  // XXH3 seed of the keys
  // The most records a block holds; 0: as many as its bytes take. With a
  // limit the table also keeps the record count within (1 - epsilon) of
  // m * block_records, so a table of equal-sized records that fit the
  // bytes runs in the paper's model of blocks of exactly B keys (what
  // `roundtable experiment stash` measures).
  std::optional<uint32_t> block_records = {};

  static constexpr uint32_t kDefaultBlockSize = 4096;
  static constexpr uint64_t kDefaultS0 = 32;
  static constexpr double kDefaultEpsilon = 0.1;
  static constexpr uint64_t kDefaultHashSeed = 0x726f756e64746162;
  static constexpr uint32_t kDefaultBlockRecords = 0;

  // Not part of the layout.
  // Bytes of the cache of clean blocks. 0: every block read goes to the
  // device (the paper's model). Its arena is reserved at Open, which
  // refuses (InvalidArgument) one larger than the machine's memory. Blocks written since the last checkpoint
  // (below) borrow its free slots and all but an eighth of the others.
  uint64_t block_cache_bytes = 8 << 20;
  // Blocks written since the last checkpoint stay in memory until the next
  // one (each block is either cached or held: a held block takes a slot
  // the cache lends, or memory of its own once all but an eighth of the
  // cache is lent and none of it is free, and is cached where it lies once
  // the checkpoint has written it). A
  // checkpoint starts after a write
  // that takes the write-ahead log past this many bytes, or the held blocks
  // past this or block_cache_bytes, whichever is larger; and on Checkpoint
  // and Close. The log bounds recovery's replay. The last checkpoint's
  // blocks stay in memory until a thread of its own has written them in
  // place (while the writers go on, logging to the log's other file).
  // While that thread still runs, the next checkpoint waits until the log
  // or the held blocks pass their limit by a quarter, rather than have the
  // writers wait. In a table larger than that budget the blocks held
  // longest are written ahead of the next checkpoint (to new places it
  // then commits), once more than half the budget is held, so that the
  // checkpoints follow the log rather than the memory
  // (TableStats::written_ahead); in any table, once the held blocks, the
  // last checkpoint's and those on their way pass seven eighths of the
  // budget, so that together they stay within it (in the cache's slots
  // when the cache is the budget); a checkpoint also starts
  // once the blocks written ahead since the last pass the table's size,
  // as their places and the places they left stay in the block file
  // until it. A checkpoint
  // writes every held block once (at a new place in the block file), so
  // random updates spread over a large table cost far less when many land
  // on each block between checkpoints: a cache large enough for the table
  // lets the held blocks grow to the whole table. 0 (the default): as
  // many bytes as block_cache_bytes, and at least kMinCheckpointBytes, so
  // that a table that fits its cache is checkpointed about once per
  // cache's worth of log rather than rewritten whole every 32 MiB; a
  // crash then replays at most that much log.
  uint64_t checkpoint_bytes = 0;
  static constexpr uint64_t kMinCheckpointBytes = 32 << 20;
  // Out-of-line values (docs/table.md, "Values of any size") are written
  // in place, before their writes are logged, and a checkpoint syncs them.
  // One also starts once this many bytes of them were written since the
  // last (recovery reads back at most that many, to check them), or once
  // the values overwritten or deleted since pass an eighth of those stored
  // (or of checkpoint_bytes, if larger): their space is reused only after
  // the next checkpoint.
  uint64_t value_checkpoint_bytes = uint64_t{1} << 30;
  // A put or delete whose block is not held (and whose key is not in the stash)
  // waits in the write buffer, reading nothing, where it would make a block
  // dirty for one record (a delete as a tombstone of its key); a bucket whose
  // buffered records would fill its block is drained at once. The buffer has a
  // copy in its own file, written at checkpoints as the stash copy is, so that
  // it outlives the log. While the buffer's records (their encoded bytes and 32
  // bytes each besides: the record's entry in the buffer's hash map, with its
  // key hash, and its bucket) pass this, the puts of one bucket after another,
  // in a sweep over the buckets, are applied to their blocks: one block read
  // and write for all the puts a bucket gathered since the sweep last passed
  // it, where each put would read and write it once. Reads look in the buffer
  // first. Table::Flush applies them all. 0: no buffer, every put edits its
  // block at once. Ignored (no buffer) in memory.
  uint64_t write_buffer_bytes = 64 << 20;
  // One memory budget for the cache, the held blocks and the write buffer
  // together (0, the default: block_cache_bytes and write_buffer_bytes as
  // given, the buffer on top of the cache). With it, the cache is this
  // many bytes and the write buffer a quarter of them (block_cache_bytes
  // and write_buffer_bytes are ignored), and while the buffer holds
  // records the cache gives up as many slots as they take twice over (the
  // records, and room for the copy a checkpoint makes of them), their
  // memory going back to the system: a table within the budget is cached
  // whole, and one past it shares the budget between its cache and its
  // buffer. The stash and what is kept by bucket, which scale with the
  // table, come on top (TableStats::stash_memory_bytes and
  // bucket_memory_bytes; docs/table.md, "Memory").
  uint64_t memory_bytes = 0;
  // kMemory: the table lives in memory only, with no files or directory
  // (the path is only a name) and no write-ahead log; Open always creates
  // it, and it is gone when closed. For experiments and tests.
  Backend backend = Backend::kAuto;
  bool direct_io = false;
  bool create_if_missing = true;
  bool error_if_exists = false;
  bool read_only = false;
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

// Where a key lives (Table::Locate): for operators and tests.
struct KeyLocation {
  uint64_t hash = 0;    // XXH3-64 of the key with the table's seed
  uint64_t bucket = 0;  // round-mapping of the hash
  // Where the bucket's block lies in the block file as of the last
  // checkpoint (each checkpoint that writes it moves it); 0 for a bucket
  // made since, whose block is only in memory.
  uint64_t block = 0;
  enum class Where { kAbsent, kBlock, kStash, kWriteBuffer };
  Where where = Where::kAbsent;
  // A value stored out of line: its extent in the value file (bytes).
  bool out_of_line = false;
  uint64_t value_offset = 0;
  uint64_t value_bytes = 0;  // the value's length, in line or not
};

struct WriteOptions {
  // Sync the write-ahead log before returning: the write then survives power
  // loss. Without it a write survives a crash of the process.
  bool sync = false;
};

struct TableStats {
  uint64_t buckets = 0;  // m
  uint64_t min_buckets = 0;  // the floor Table::Reserve set (0: s0)
  // Records in the blocks and the stash: not the puts still in the write
  // buffer (below), some of which add a record. Table::Count() is exact.
  uint64_t records = 0;
  uint64_t stash_records = 0;
  uint64_t stash_bytes = 0;
  // Puts and deletes waiting in the write buffer (Options::
  // write_buffer_bytes), not counted in `records` and `data_bytes` until
  // they reach their blocks (some puts replace a stored record; a delete
  // removes one if its key is stored).
  uint64_t buffered_records = 0;
  uint64_t buffered_deletes = 0;  // of buffered_records, the deletes
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
  // The cache's bytes in use: block_cache_bytes, or less while one memory
  // budget (Options::memory_bytes) gives the write buffer a share of it.
  uint64_t cache_bytes = 0;
  // Memory that scales with the table rather than with the budget, as the
  // table counts it (the allocator's own overhead aside): the stash's
  // records and their copy; and what is kept by bucket (the stash's and
  // the write buffer's lists and filters, the held blocks' summaries,
  // the cache's index, the block map).
  uint64_t stash_memory_bytes = 0;
  uint64_t bucket_memory_bytes = 0;
  // Blocks of the block file, the stash copy and the write buffer's copy
  // written since the last checkpoint, held in memory until the next.
  uint64_t held_blocks = 0;
  // Bucket blocks in memory that their place in the block file does not
  // hold yet: held since the last checkpoint, frozen while its thread
  // writes them, or on their way ahead of the next. They stay within the
  // held blocks' budget less an eighth, but for the blocks of one write
  // and while a backup copies the files (docs/table.md, "Block cache").
  uint64_t unwritten_blocks = 0;
  // Held bucket blocks written to new places in the block file before the
  // checkpoint that commits them, so that a table larger than its held
  // blocks' budget keeps them to half of it (docs/durability.md).
  uint64_t written_ahead = 0;
  // Values stored out of line (docs/table.md, "Values of any size"): how
  // many and their bytes; the value file's bytes, and of those the ones
  // free (reusable, or once the next checkpoint is durable).
  uint64_t value_count = 0;
  uint64_t value_bytes = 0;
  uint64_t value_file_bytes = 0;
  uint64_t value_free_bytes = 0;
  uint64_t wal_bytes = 0;  // records in the write-ahead log
  uint64_t checkpoints = 0;
  // What Open found after a crash: log records replayed, whether a
  // checkpoint's journal was applied again, and how long recovery took.
  uint64_t recovered_records = 0;
  bool recovered_journal = false;
  uint64_t recovery_ns = 0;
  IoStats physical_blocks;   // the block file
  IoStats physical_stash;    // the stash copy
  IoStats physical_wal;      // the write-ahead log (both its files)
  IoStats physical_journal;  // the checkpoint journal
  IoStats physical_buffer;   // the write buffer's copy
  IoStats physical_values;   // the value file
  IoStats physical_spacemap; // the value file's space map
  IoStats physical_blockmap;  // where each bucket's block lies (block map)
};

}  // namespace roundtable

#endif  // ROUNDTABLE_OPTIONS_H_
