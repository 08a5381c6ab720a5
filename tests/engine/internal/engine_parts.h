// The engine's parts below Table::Impl, assembled over memory devices as a
// new table's: a formatted block file under a BucketStore, a BucketTable
// with its stash copy, and (when asked) a WriteBuffer on top. For the unit
// tests of each part, and a lookup that searches them in a read's order.
#ifndef ROUNDTABLE_TESTS_ENGINE_INTERNAL_ENGINE_PARTS_H_
#define ROUNDTABLE_TESTS_ENGINE_INTERNAL_ENGINE_PARTS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/internal/bucket_store.h"
#include "engine/internal/bucket_table.h"
#include "engine/internal/stash_log.h"
#include "engine/internal/table_files.h"
#include "engine/internal/value_store.h"
#include "engine/internal/write_buffer.h"
#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::internal {

struct EngineParts {
  // A new table of `s0` buckets in blocks of `block_size` bytes, with a
  // cache of `cache_bytes`; a write buffer of `buffer_bytes` (0: none)
  // whose held blocks' budget is `held_limit`.
  EngineParts(uint32_t block_size, uint64_t s0, uint64_t cache_bytes,
              uint64_t buffer_bytes = 0, uint64_t held_limit = 0)
      : blocks(io::NewMemoryDevice(block_size)),
        stash_file(io::NewMemoryDevice(block_size)),
        buffer_file(io::NewMemoryDevice(block_size)),
        values_file(io::NewMemoryDevice(block_size)),
        spacemap_file(io::NewMemoryDevice(block_size)),
        blockmap_file(io::NewMemoryDevice(block_size)) {
    EXPECT_TRUE(FormatNewBlocks(*blocks, s0).ok());
    sb.block_size = block_size;
    sb.s0 = s0;
    sb.epsilon = 0.1;
    sb.hash_seed = 7;
    sb.num_buckets = s0;
    store = std::make_unique<BucketStore>(blocks.get(), blockmap_file.get(),
                                          block_size, 0, cache_bytes);
    EXPECT_TRUE(store->LoadPlaces(s0, /*stored=*/false).ok());
    values = std::make_unique<ValueStore>(values_file.get(),
                                          spacemap_file.get(), sb);
    table = std::make_unique<BucketTable>(
        sb, *mapping::RoundMapping::Create(s0, s0), store.get(),
        stash_file.get(), values.get(), &error);
    buffer = std::make_unique<WriteBuffer>(buffer_bytes, held_limit, sb,
                                           buffer_file.get(), table.get(),
                                           store.get(), &error);
  }

  // What a Get finds: the buffered put, else the stashed record, else the
  // record in the key's block.
  std::optional<std::string> Lookup(std::string_view key) {
    const uint64_t h = table->Hash(key);
    const uint64_t b = table->BucketOf(h);
    if (const Record* r = buffer->Find(b, key, h)) {
      if (IsTombstone(r->value())) return std::nullopt;  // a delete waits
      return std::string(r->value());
    }
    if (const Record* r = table->FindStashed(b, key, h)) {
      return std::string(r->value());
    }
    std::string value;
    absl::StatusOr<bool> found = store->Find(b, key, TagOf(h), &value);
    EXPECT_TRUE(found.ok()) << found.status();
    if (!found.ok() || !*found) return std::nullopt;
    return value;
  }

  // What a checkpoint does to the bucket blocks, without the journal: the
  // held blocks given new places, sealed, written there, and no longer
  // held (cached where they lie, when their slots are the cache's); the
  // block map's changed blocks dropped (nothing here reads its file).
  void CheckpointBlocks() {
    ++sequence;
    ASSERT_TRUE(
        store->StagePlaces(table->num_buckets(), sequence, sequence - 1).ok());
    BlockMap& places = store->places();
    if (blocks->num_blocks() < places.end()) {
      ASSERT_TRUE(blocks->Resize(places.end()).ok());
    }
    DeferredDevice& held = store->device();
    held.Freeze();
    held.SealFrozen();
    for (const auto& [block, bytes] : held.frozen()) {
      ASSERT_TRUE(blocks->Write(places.PlaceOf(block), bytes.span()).ok());
    }
    held.ReleaseFrozen();
    places.device().Freeze();
    places.device().ReleaseFrozen();
  }

  // A write's end, as Table::Impl::Apply ends one.
  void EndWrite() {
    EXPECT_TRUE(buffer->Settle().ok());
    store->RefreshFilters();
  }

  std::unique_ptr<io::BlockDevice> blocks, stash_file, buffer_file, values_file,
      spacemap_file, blockmap_file;
  Superblock sb;
  uint64_t sequence = 1;  // of the last CheckpointBlocks
  FirstError error;
  std::unique_ptr<BucketStore> store;
  std::unique_ptr<ValueStore> values;
  std::unique_ptr<BucketTable> table;
  std::unique_ptr<WriteBuffer> buffer;
};

// A snapshot's records, by key.
inline std::map<std::string, std::string> MapOf(const StashLog::Live& live) {
  std::map<std::string, std::string> map;
  for (const StashLog::LiveRecord& r : live) {
    map.emplace(r.key(), r.value());
  }
  return map;
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_TESTS_ENGINE_INTERNAL_ENGINE_PARTS_H_
