// roundtable with 4 KiB blocks, epsilon = 0.1 and the s0 its documentation
// suggests for the workload's records (SuggestedS0: 4 for 100-byte values),
// the block cache given the memory budget, the default write buffer (on top
// of the budget, as RocksDB's and LevelDB's memtables are), and a sync of
// the log on every write when asked. It has nothing to pre-size: the table
// grows a bucket at a time.
#include <memory>

#include "absl/strings/str_format.h"
#include "bench/kvbench/kv_engine.h"
#include "roundtable/table.h"

namespace roundtable::kvbench {
namespace {

class RoundtableEngine : public KvEngine {
 public:
  RoundtableEngine(std::unique_ptr<Table> table, bool sync)
      : table_(std::move(table)) {
    write_.sync = sync;
  }

  absl::Status Get(std::string_view key, std::string* value) override {
    return table_->Get(key, value);
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    return table_->Put(key, value, write_);
  }
  absl::Status Delete(std::string_view key) override {
    return table_->Delete(key, write_);
  }
  absl::Status PutBatch(std::span<const KvRecord> records) override {
    WriteBatch batch;
    for (const KvRecord& r : records) batch.Put(r.key, r.value);
    return table_->Write(batch, write_);
  }
  absl::StatusOr<uint64_t> Scan() override {
    uint64_t n = 0;
    auto it = table_->NewIterator();
    for (; it->Valid(); it->Next()) ++n;
    if (!it->status().ok()) return it->status();
    return n;
  }
  absl::Status Sync() override { return table_->Sync(); }
  // The blocks held since the last checkpoint go to the block file.
  absl::Status Settle() override { return table_->Checkpoint(); }
  absl::Status Close() override { return table_->Close(); }

  std::vector<std::pair<std::string, double>> Stats() override {
    const TableStats s = table_->GetStats();
    const LogicalLedger& l = s.logical;
    return {{"s0", s.s0},
            {"buckets", s.buckets},
            {"stash_records", s.stash_records},
            {"buffered_records", s.buffered_records},
            {"cache_bytes", s.cache_bytes},
            {"stash_memory_bytes", s.stash_memory_bytes},
            {"bucket_memory_bytes", s.bucket_memory_bytes},
            {"utilization", s.utilization},
            {"logical_get_reads", l.get_reads},
            {"logical_put_reads", l.put_reads},
            {"logical_put_writes", l.put_writes},
            {"logical_delete_reads", l.delete_reads},
            {"logical_delete_writes", l.delete_writes},
            {"logical_grow_reads", l.grow_reads},
            {"logical_grow_writes", l.grow_writes},
            {"logical_shrink_reads", l.shrink_reads},
            {"logical_shrink_writes", l.shrink_writes},
            {"logical_stash_copy_writes", l.stash_copy_writes},
            {"buffer_drains", l.buffer_drains},
            {"distribute_drains", l.distribute_drains},
            {"grows", l.grows},
            {"shrinks", l.shrinks},
            {"cache_hits", s.cache_hits},
            {"cache_misses", s.cache_misses},
            {"physical_block_reads", s.physical_blocks.blocks_read},
            {"physical_block_writes", s.physical_blocks.blocks_written},
            {"written_ahead", s.written_ahead},
            {"physical_stash_writes", s.physical_stash.blocks_written},
            {"physical_journal_writes", s.physical_journal.blocks_written},
            {"physical_wal_bytes", s.physical_wal.bytes_written},
            {"physical_buffer_writes", s.physical_buffer.blocks_written},
            // Seconds spent inside each file's calls (writes and syncs).
            {"physical_block_wait_s", s.physical_blocks.wait_ns * 1e-9},
            {"physical_stash_wait_s", s.physical_stash.wait_ns * 1e-9},
            {"physical_journal_wait_s", s.physical_journal.wait_ns * 1e-9},
            {"physical_wal_wait_s", s.physical_wal.wait_ns * 1e-9},
            {"physical_buffer_wait_s", s.physical_buffer.wait_ns * 1e-9},
            {"checkpoints", s.checkpoints},
            {"value_count", s.value_count},
            {"value_file_bytes", s.value_file_bytes},
            {"value_free_bytes", s.value_free_bytes},
            {"physical_value_reads", s.physical_values.read_ops},
            {"physical_value_bytes_written", s.physical_values.bytes_written},
            {"physical_value_wait_s", s.physical_values.wait_ns * 1e-9}};
  }

 private:
  std::unique_ptr<Table> table_;
  WriteOptions write_;
};

}  // namespace

std::vector<EngineInfo> RoundtableEngines() {
  EngineInfo info;
  info.name = "roundtable";
  info.version = ROUNDTABLE_VERSION_STRING " (this tree)";
  info.config = absl::StrFormat(
      "block %d B, s0 = SuggestedS0 (%d for 16 B keys and 100 B values), "
      "epsilon %.2f, one memory budget = budget (cache, held blocks and "
      "write buffer; --roundtable_write_buffer: block cache = budget and "
      "a write buffer on top), Reserve(records) (growth: none)",
      Options::kDefaultBlockSize,
      SuggestedS0(Options::kDefaultBlockSize, 16, 100),
      Options::kDefaultEpsilon);
  info.open =
      [](const EngineOptions& o) -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    Options options;
    options.s0 = o.roundtable_s0 != 0 ? o.roundtable_s0
                                      : SuggestedS0(Options::kDefaultBlockSize,
                                                    o.key_bytes, o.value_bytes);
    if (o.roundtable_write_buffer >= 0) {
      options.block_cache_bytes = o.cache_bytes;
      options.write_buffer_bytes =
          static_cast<uint64_t>(o.roundtable_write_buffer);
    } else {
      options.memory_bytes = o.cache_bytes;
    }
    auto table = Table::Open(options, o.dir);
    if (!table.ok()) return table.status();
    if (o.expected_records > 0) {
      const absl::Status reserved =
          (*table)->Reserve(o.expected_records, o.key_bytes, o.value_bytes);
      if (!reserved.ok()) return reserved;
    }
    return std::make_unique<RoundtableEngine>(std::move(*table), o.sync);
  };
  return {info};
}

}  // namespace roundtable::kvbench
