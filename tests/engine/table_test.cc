// The table against a std::map model through random operations and reopens,
// over block sizes, s0, epsilon and backends; the paper's transfer counts;
// growth to many records and back to empty; corruption; bad input.
#include "roundtable/table.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/superblock.h"
#include "engine/internal/table_impl.h"
#include "engine/mapping/round_mapping.h"
#include "gtest/gtest.h"
#include "io/base/status_macros.h"
#include "io/block_device.h"
#include "tests/engine/table_dirs.h"

namespace roundtable {
namespace {

std::string TempDir(const std::string& tag) {
  return FreshTableDir("rt_table", tag);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<Table> OpenOrDie(const Options& o, const std::string& dir) {
  auto t = Table::Open(o, dir);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

struct Shape {
  uint32_t block_size;
  uint64_t s0;
  double epsilon;
  io::Backend backend;
  uint64_t cache_blocks;       // block cache size in blocks (0: none)
  uint32_t block_records = 0;  // Options::block_records
  // Options::write_buffer_bytes; -1: the default (which these tables never
  // fill, so only Flush drains it).
  int64_t write_buffer = -1;
};

std::string Describe(const Shape& s) {
  return "bs" + std::to_string(s.block_size) + "_s0_" + std::to_string(s.s0) +
         "_eps" + std::to_string(static_cast<int>(s.epsilon * 1000)) +
         (s.backend == io::Backend::kUring ? "_uring" : "_posix") + "_cache" +
         std::to_string(s.cache_blocks) +
         (s.block_records ? "_records" + std::to_string(s.block_records) : "") +
         (s.write_buffer >= 0 ? "_buffer" + std::to_string(s.write_buffer)
                              : "");
}

std::string ShapeName(const testing::TestParamInfo<Shape>& info) {
  return Describe(info.param);
}

void PrintTo(const Shape& s, std::ostream* os) { *os << Describe(s); }

// A value of the mix the model tests write: mostly small ones that fit
// inline beside their key (up to `room` bytes), and now and then one of
// the sizes at the edges: empty, the inline limit, one byte past it (out
// of line), 4 KiB, 64 KiB and (unless `small`) 1 MiB. Its first bytes are
// random, so that no two values are alike.
std::string RandomValue(std::mt19937_64& rng, size_t room, bool small) {
  const int pick = static_cast<int>(rng() % 100);
  size_t size = 0;
  if (pick < 88) {
    size = rng() % (room + 1);
  } else if (pick < 90) {
    size = 0;
  } else if (pick < 92) {
    size = room;
  } else if (pick < 95) {
    size = room + 1;
  } else if (pick < 97) {
    size = 4096;
  } else if (pick < 99 || small) {
    size = 65536;
  } else {
    size = 1 << 20;
  }
  std::string value(size, static_cast<char>('a' + rng() % 26));
  const uint64_t mark = rng();
  std::memcpy(value.data(), &mark, std::min(size, sizeof mark));
  return value;
}

class TableModelTest : public testing::TestWithParam<Shape> {
 protected:
  Options MakeOptions() const {
    Options o;
    o.block_size = GetParam().block_size;
    o.s0 = GetParam().s0;
    o.epsilon = GetParam().epsilon;
    o.backend = GetParam().backend;
    o.block_cache_bytes = GetParam().cache_blocks * GetParam().block_size;
    o.block_records = GetParam().block_records;
    if (GetParam().write_buffer >= 0) {
      o.write_buffer_bytes = static_cast<uint64_t>(GetParam().write_buffer);
    }
    return o;
  }
  void SetUp() override {
    if (GetParam().backend == io::Backend::kUring && !io::UringAvailable()) {
      GTEST_SKIP() << "no io_uring here";
    }
  }
};

TEST_P(TableModelTest, RandomOperationsMatchAStdMap) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed * 7919 + GetParam().block_size);
    Options options = MakeOptions();
    // Small blocks make small tables: in the first run, check every
    // invariant after every write.
    options.paranoid_checks = seed == 1 && GetParam().block_size == 512;
    const std::string dir = TempDir("model");
    auto table = OpenOrDie(options, dir);
    ASSERT_NE(table, nullptr);
    const size_t max_record = table->max_record_bytes();
    std::map<std::string, std::string> model;
    const int keys = 1500;
    auto random_key = [&] { return "k" + std::to_string(rng() % keys); };
    std::string reused;
    for (int step = 0; step < 6000; ++step) {
      const int op = static_cast<int>(rng() % 100);
      if (op < 45) {
        const std::string key = random_key();
        // One key-length byte, two value-length bytes at most, the slot.
        const size_t room = max_record - key.size() - 3 - 4;
        const std::string value =
            RandomValue(rng, room, options.paranoid_checks);
        ASSERT_TRUE(table->Put(key, value).ok()) << "step " << step;
        model[key] = value;
      } else if (op < 65) {
        const std::string key = random_key();
        ASSERT_TRUE(table->Delete(key).ok()) << "step " << step;
        model.erase(key);
      } else if (op < 72) {
        // A batch of up to five puts and deletes.
        WriteBatch batch;
        std::map<std::string, std::optional<std::string>> effect;
        for (int k = 1 + rng() % 5; k > 0; --k) {
          const std::string key = random_key();
          if (rng() % 3) {
            const std::string value =
                rng() % 8 ? std::string(rng() % 40, 'A' + rng() % 26)
                          : RandomValue(rng, 40, options.paranoid_checks);
            batch.Put(key, value);
            effect[key] = value;
          } else {
            batch.Delete(key);
            effect[key] = std::nullopt;
          }
        }
        ASSERT_TRUE(table->Write(batch).ok()) << "step " << step;
        for (const auto& [key, value] : effect) {
          if (value) {
            model[key] = *value;
          } else {
            model.erase(key);
          }
        }
      } else if (op < 78) {
        std::vector<std::string> keys;
        for (int k = 0; k < 6; ++k) keys.push_back(random_key());
        const std::vector<std::string_view> views(keys.begin(), keys.end());
        const auto got = table->MultiGet(views);
        ASSERT_EQ(got.size(), keys.size());
        for (size_t k = 0; k < keys.size(); ++k) {
          auto it = model.find(keys[k]);
          if (it == model.end()) {
            ASSERT_EQ(got[k].status().code(), absl::StatusCode::kNotFound);
          } else {
            ASSERT_TRUE(got[k].ok()) << got[k].status();
            ASSERT_EQ(*got[k], it->second);
          }
        }
      } else if (op < 79) {
        // A full scan yields the model exactly once each.
        std::map<std::string, std::string> seen;
        auto it = table->NewIterator();
        for (; it->Valid(); it->Next()) {
          ASSERT_TRUE(seen.emplace(it->key(), it->value()).second)
              << "key " << it->key() << " twice";
        }
        ASSERT_TRUE(it->status().ok()) << it->status();
        ASSERT_EQ(seen, model) << "step " << step;
      } else if (op < 98) {
        const std::string key = random_key();
        auto got = table->Get(key);
        // The form that fills a caller's string, reused across steps.
        const absl::Status into = table->Get(key, &reused);
        auto it = model.find(key);
        if (it == model.end()) {
          ASSERT_EQ(got.status().code(), absl::StatusCode::kNotFound)
              << "step " << step << " key " << key;
          ASSERT_EQ(into.code(), absl::StatusCode::kNotFound);
        } else {
          ASSERT_TRUE(got.ok()) << got.status() << " step " << step;
          ASSERT_EQ(*got, it->second) << "step " << step << " key " << key;
          ASSERT_TRUE(into.ok()) << into;
          ASSERT_EQ(reused, it->second) << "step " << step << " key " << key;
        }
      } else {
        ASSERT_TRUE(table->Close().ok());
        table = OpenOrDie(options, dir);
        ASSERT_NE(table, nullptr);
      }
      if (step % 500 == 0) {
        ASSERT_TRUE(table->Check().ok()) << table->Check() << " step " << step;
        // The buffered puts reach their blocks: then every record counts.
        ASSERT_TRUE(table->Flush().ok());
        ASSERT_EQ(table->GetStats().buffered_records, 0u);
        ASSERT_TRUE(table->Check().ok()) << table->Check() << " step " << step;
        ASSERT_EQ(table->GetStats().records, model.size());
      }
    }
    ASSERT_TRUE(table->Check().ok()) << table->Check();
    // Close and reopen: exactly the same contents, buffered puts included.
    const uint64_t buffered = table->GetStats().buffered_records;
    ASSERT_TRUE(table->Close().ok());
    table = OpenOrDie(options, dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Check().ok()) << table->Check();
    EXPECT_EQ(table->GetStats().buffered_records, buffered);
    ASSERT_TRUE(table->Flush().ok());
    EXPECT_EQ(table->GetStats().records, model.size());
    for (const auto& [key, value] : model) {
      auto got = table->Get(key);
      ASSERT_TRUE(got.ok()) << key;
      ASSERT_EQ(*got, value);
    }
    table.reset();
    ASSERT_TRUE(DestroyTable(dir).ok());
  }
}

TEST_P(TableModelTest, GrowsFromEmptyAndShrinksBackToEmpty) {
  const Options options = MakeOptions();
  const std::string dir = TempDir("grow");
  auto table = OpenOrDie(options, dir);
  ASSERT_NE(table, nullptr);
  const int n = 20000;
  const std::string value(20, 'v');
  // Every 500th key takes a value out of line, of 4 KiB, 64 KiB or 1 MiB
  // in turn: distribute moves their references, never their bytes.
  auto value_of = [&](int i) {
    if (i % 500 != 7) return value;
    return std::string(size_t{4096} << (4 * (i / 500 % 3)),
                       static_cast<char>('a' + i % 26));
  };
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Put("key" + std::to_string(i), value_of(i)).ok()) << i;
    if (i % 4000 == 0) {
      ASSERT_TRUE(table->Check().ok()) << table->Check();
    }
  }
  ASSERT_TRUE(table->Flush().ok());
  const TableStats full = table->GetStats();
  EXPECT_EQ(full.records, static_cast<uint64_t>(n));
  EXPECT_EQ(full.value_count, static_cast<uint64_t>(n / 500));
  EXPECT_GT(full.buckets, *options.s0);
  EXPECT_GT(full.logical.grows, 0u);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  for (int i = 7; i < n; i += 500) {
    auto got = table->Get("key" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(*got, value_of(i));
  }
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Delete("key" + std::to_string(i)).ok()) << i;
    if (i % 4000 == 0) {
      ASSERT_TRUE(table->Check().ok()) << table->Check();
    }
  }
  // The deletes whose blocks were not in memory (once a checkpoint has
  // written them) wait in the write buffer: Flush applies them.
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  EXPECT_EQ(*table->Count(), 0u);
  ASSERT_TRUE(table->Flush().ok());
  const TableStats empty = table->GetStats();
  EXPECT_EQ(empty.buffered_records, 0u);
  EXPECT_EQ(empty.records, 0u);
  EXPECT_EQ(empty.data_bytes, 0u);
  EXPECT_EQ(empty.value_count, 0u);
  EXPECT_EQ(empty.value_bytes, 0u);
  EXPECT_EQ(empty.value_free_bytes, empty.value_file_bytes);
  EXPECT_EQ(empty.stash_records, 0u);
  EXPECT_EQ(empty.buckets, *options.s0);
  EXPECT_EQ(empty.logical.shrinks, empty.logical.grows);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

std::vector<Shape> Shapes() {
  // Caches of none, a few blocks (constant eviction of dirty blocks) and
  // more than the table; write buffers of none, the default, a few records
  // (drained all the time) and a few hundred.
  return {
      {4096, 32, 0.1, io::Backend::kPosix, 0},
      {4096, 32, 0.1, io::Backend::kPosix, 2048},
      {512, 1, 0.25, io::Backend::kPosix, 7, 0, 2048},
      {512, 3, 0.05, io::Backend::kUring, 0, 0, 0},
      {1024, 8, 0.125, io::Backend::kPosix, 64, 0, 4096},
      {4096, 4, 0.5, io::Backend::kUring, 16},
      {16384, 2, 0.1, io::Backend::kPosix, 0, 0, 0},
      {4096, 8, 0.125, io::Backend::kPosix, 0, 0, 30000},
      // A record limit: small records are held by their count, large ones
      // by their bytes.
      {512, 2, 0.2, io::Backend::kPosix, 7, 5, 1024},
      {4096, 8, 0.125, io::Backend::kPosix, 0, 24},
  };
}

INSTANTIATE_TEST_SUITE_P(Shapes, TableModelTest, testing::ValuesIn(Shapes()),
                         ShapeName);

// ---------------------------------------------------------------------------

// POSIX I/O, no block cache and no write buffer (the paper's model): every
// put edits its block, and every logical transfer reaches the device.
Options Posix() {
  Options o;
  o.backend = io::Backend::kPosix;
  o.block_cache_bytes = 0;
  o.write_buffer_bytes = 0;
  return o;
}

// Posix() with small blocks (1 KiB, s0 = 4) and a write buffer of `bytes`.
Options SmallBlocksBuffered(uint64_t bytes) {
  Options o = Posix();
  o.block_size = 1024;
  o.s0 = 4;
  o.write_buffer_bytes = bytes;
  return o;
}

TEST(TableTest, SuggestedS0FollowsTheSquareRootOfTheRecordsPerBlock) {
  EXPECT_EQ(SuggestedS0(4096, 16, 100), 4u);    // 33 records a block
  EXPECT_EQ(SuggestedS0(4096, 16, 990), 4u);    // 4, inline
  EXPECT_EQ(SuggestedS0(4096, 16, 1000), 8u);   // out of line: 75
  EXPECT_EQ(SuggestedS0(65536, 8, 8), 32u);     // 2977
  EXPECT_EQ(SuggestedS0(4096, 16, 0), 8u);      // 184
  EXPECT_EQ(SuggestedS0(65536, 16, 100), 16u);  // 543
  // Out of line, a value is a 32-byte reference in the block: 75 a block.
  EXPECT_EQ(SuggestedS0(4096, 16, 1 << 20), 8u);
  EXPECT_EQ(SuggestedS0(4096, 16, 5000), 8u);
  for (uint32_t bs = 512; bs <= 65536; bs *= 2) {
    uint64_t last = 32;
    for (size_t value = 0; value <= 2000; value += 7) {
      const uint64_t s0 = SuggestedS0(bs, 16, value);
      size_t record =
          4 + 1 + (value < 128 ? 1 : 2) + 16 + value;  // slot, lengths, bytes
      // Past the inline limit, the reference's record.
      if (record > (bs - 32) / 4) record = 4 + 1 + 1 + 16 + 32;
      const double root = std::sqrt(static_cast<double>(bs - 32) / record);
      EXPECT_TRUE(s0 == 4 || s0 == 8 || s0 == 16 || s0 == 32) << s0;
      if (s0 > 4) {
        EXPECT_LE(static_cast<double>(s0), root) << bs << " " << value;
      }
      if (s0 < 32) {
        EXPECT_GT(static_cast<double>(2 * s0), root) << bs << " " << value;
      }
      if (record != 4 + 1 + 1 + 16 + 32 || value == 32) {
        EXPECT_LE(s0, last) << "larger records never ask for more slack";
      }
      last = s0;
    }
  }
}

TEST(TableTest, TransfersFollowThePapersModel) {
  Options o = Posix();
  o.block_size = 512;
  o.s0 = 4;
  const std::string dir = TempDir("ledger");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  for (int i = 0; i < 3000; ++i) {
    const TableStats before = table->GetStats();
    ASSERT_TRUE(table->Put("key" + std::to_string(i), "value").ok());
    const TableStats after = table->GetStats();
    if (after.logical.grows == before.logical.grows) continue;
    // One grow: z reads and z + 1 writes, z the step s before it.
    const uint64_t z = mapping::RoundState(*o.s0, before.buckets).step();
    EXPECT_EQ(after.logical.grow_reads - before.logical.grow_reads, z);
    EXPECT_EQ(after.logical.grow_writes - before.logical.grow_writes, z + 1);
  }
  const TableStats s = table->GetStats();
  ASSERT_GT(s.logical.grows, 10u);
  for (int i = 0; i < 3000; i += 7) {
    const std::string key = "key" + std::to_string(i);
    const TableStats before = table->GetStats();
    ASSERT_TRUE(table->Get(key).ok());
    const uint64_t reads =
        table->GetStats().logical.get_reads - before.logical.get_reads;
    // A stash hit reads nothing; any other Get reads exactly one block.
    EXPECT_LE(reads, 1u);
    if (s.stash_records == 0) {
      EXPECT_EQ(reads, 1u);
    }
  }
  // A miss reads exactly one block too.
  const TableStats before = table->GetStats();
  EXPECT_EQ(table->Get("absent").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(table->GetStats().logical.get_reads - before.logical.get_reads, 1u);
}

TEST(TableTest, StashHitsReadNoBlock) {
  // Tiny blocks and big records overflow into the stash quickly.
  Options o = Posix();
  o.block_size = 512;
  o.s0 = 1;
  o.epsilon = 0.5;
  const std::string dir = TempDir("stash");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  const std::string value(100, 'x');
  int i = 0;
  while (table->GetStats().stash_records == 0 && i < 10000) {
    ASSERT_TRUE(table->Put("k" + std::to_string(i++), value).ok());
  }
  ASSERT_GT(table->GetStats().stash_records, 0u) << "no record was stashed";
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  int stash_hits = 0;
  for (int k = 0; k < i; ++k) {
    const TableStats before = table->GetStats();
    ASSERT_TRUE(table->Get("k" + std::to_string(k)).ok());
    if (table->GetStats().logical.get_reads == before.logical.get_reads) {
      ++stash_hits;
    }
  }
  EXPECT_EQ(static_cast<uint64_t>(stash_hits), table->GetStats().stash_records);
  // The stash survives a reopen.
  const uint64_t stashed = table->GetStats().stash_records;
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->GetStats().stash_records, stashed);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
}

// With no cache, a put or delete finds no block in memory: it waits in the
// write buffer and reads nothing; a read finds it there. A drain applies
// all the puts a bucket gathered with one read and one write of its block.
TEST(TableTest, BufferedPutsReadNoBlockAndADrainAppliesManyAtOnce) {
  const Options o = SmallBlocksBuffered(uint64_t{1} << 20);
  const std::string dir = TempDir("buffer");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Put("old", "stored").ok());
  ASSERT_TRUE(table->Put("gone", "stored").ok());
  ASSERT_TRUE(table->Flush().ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  const TableStats start = table->GetStats();
  EXPECT_EQ(start.records, 2u);
  EXPECT_EQ(start.buffered_records, 0u);
  // About 50 puts a bucket: below the 70 or so that fill a block, which
  // would drain at once (BucketsThatFillABlockDrainAtOnce).
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        table->Put("k" + std::to_string(i), "v" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(table->Put("old", "new").ok());   // replaces a stored record
  ASSERT_TRUE(table->Delete("gone").ok());      // waits as a tombstone
  ASSERT_TRUE(table->Put("k7", "again").ok());  // replaces a buffered put
  ASSERT_TRUE(table->Delete("k8").ok());        // a buffered put's tombstone
  const TableStats buffered = table->GetStats();
  EXPECT_EQ(buffered.buffered_records, static_cast<uint64_t>(n + 2));
  EXPECT_EQ(buffered.logical.put_reads, start.logical.put_reads);
  EXPECT_EQ(buffered.logical.delete_reads, start.logical.delete_reads);
  EXPECT_EQ(buffered.physical_blocks.blocks_read,
            start.physical_blocks.blocks_read)
      << "neither the puts nor the deletes read a block";
  EXPECT_EQ(*table->Get("k7"), "again");
  EXPECT_EQ(*table->Get("old"), "new");
  EXPECT_TRUE(absl::IsNotFound(table->Get("k8").status()));
  EXPECT_TRUE(absl::IsNotFound(table->Get("gone").status()));
  EXPECT_EQ(table->GetStats().logical.get_reads, buffered.logical.get_reads)
      << "the buffered keys read no block";
  ASSERT_TRUE(table->Check().ok()) << table->Check();

  // Drained: every block read once (with what its grows read), far fewer
  // reads than puts.
  const TableStats unflushed = table->GetStats();  // after the Gets' reads
  ASSERT_TRUE(table->Flush().ok());
  const TableStats flushed = table->GetStats();
  EXPECT_EQ(flushed.buffered_records, 0u);
  EXPECT_EQ(flushed.records, static_cast<uint64_t>(n));  // k8 gone, old kept
  const uint64_t drains =
      flushed.logical.buffer_drains - unflushed.logical.buffer_drains;
  EXPECT_LE(drains, flushed.buckets);
  EXPECT_GT(drains, 0u);
  const uint64_t reads = flushed.physical_blocks.blocks_read -
                         unflushed.physical_blocks.blocks_read;
  EXPECT_LE(reads, drains + (flushed.logical.grow_reads -
                             unflushed.logical.grow_reads));
  EXPECT_LT(reads, static_cast<uint64_t>(n) / 4);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  EXPECT_EQ(*table->Get("k7"), "again");
  EXPECT_EQ(*table->Get("old"), "new");
  EXPECT_TRUE(absl::IsNotFound(table->Get("k8").status()));
  EXPECT_TRUE(absl::IsNotFound(table->Get("gone").status()));
  for (int i = 0; i < n; i += 97) {
    if (i == 7 || i == 8) continue;
    EXPECT_EQ(*table->Get("k" + std::to_string(i)), "v" + std::to_string(i));
  }
}

// A block file whose writes wait while a gate is closed (for at most 10 s,
// after which the gate opens and remembers that a write timed out).
class Gate {
 public:
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    if (open_) return;
    ++waiting_;
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return open_; })) {
      timed_out_ = true;
      open_ = true;  // for good: a writer stuck here must not be stuck again
    }
    --waiting_;
  }
  int waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }
  bool timed_out() {
    std::lock_guard<std::mutex> lock(mu_);
    return timed_out_;
  }
  // Writes and syncs of each log file and of the journal (each sync of
  // which is a checkpoint's commit point).
  void NoteWrite(int file) { writes_[file].fetch_add(1); }
  void NoteSync(int file) { syncs_[file].fetch_add(1); }
  int log_writes(int file) const { return writes_[file].load(); }
  int log_syncs(int file) const { return syncs_[file].load(); }
  int journal_syncs() const { return syncs_[2].load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int waiting_ = 0;
  bool timed_out_ = false;
  std::array<std::atomic<int>, 3> writes_{}, syncs_{};  // wal, wal.1, journal
};

// A device that passes each call on to the one it wraps, for a test to
// watch some of them.
class ForwardingDevice : public io::BlockDevice {
 public:
  explicit ForwardingDevice(std::unique_ptr<io::BlockDevice> inner)
      : BlockDevice(inner->path()), inner_(std::move(inner)) {}
  const io::Capabilities& capabilities() const override {
    return inner_->capabilities();
  }
  uint64_t num_blocks() const override { return inner_->num_blocks(); }

 protected:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override {
    return inner_->Read(block, buffer);
  }
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override {
    return inner_->Write(block, buffer);
  }
  absl::Status DoWriteChanged(uint64_t block, std::span<const std::byte> buffer,
                              size_t begin, size_t end) override {
    return inner_->WriteChanged(block, buffer, begin, end);
  }
  absl::Status DoSync() override { return inner_->Sync(); }
  absl::Status DoResize(uint64_t num_blocks) override {
    return inner_->Resize(num_blocks);
  }
  io::BlockDevice& inner() { return *inner_; }

 private:
  std::unique_ptr<io::BlockDevice> inner_;
};

// The writes of the block file and the journal pass the gate; the writes
// and syncs of the journal and of each log file are counted.
class GatedDevice final : public ForwardingDevice {
 public:
  // `counted`: the file whose writes and syncs the gate counts, or -1.
  GatedDevice(std::unique_ptr<io::BlockDevice> inner, Gate* gate, bool gated,
              int counted)
      : ForwardingDevice(std::move(inner)),
        gate_(gate),
        gated_(gated),
        counted_(counted) {}

 protected:
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override {
    Note();
    return ForwardingDevice::DoWrite(block, buffer);
  }
  absl::Status DoWriteChanged(uint64_t block, std::span<const std::byte> buffer,
                              size_t begin, size_t end) override {
    Note();
    return ForwardingDevice::DoWriteChanged(block, buffer, begin, end);
  }
  absl::Status DoSync() override {
    absl::Status s = ForwardingDevice::DoSync();
    if (counted_ >= 0) gate_->NoteSync(counted_);
    return s;
  }

 private:
  void Note() {
    if (counted_ >= 0) gate_->NoteWrite(counted_);
    if (gated_) gate_->Pass();
  }
  Gate* const gate_;
  const bool gated_;
  const int counted_;
};

// A checkpoint's journal and in-place writes run beside the writers: while
// they wait, writes go on (logged to the other log file), reads of the
// blocks being written (no cache here: they come through the block file's
// deferred device) see the checkpointed bytes, not the file's older ones,
// and a synced write syncs both log files, since the journal that covers
// the one the writers left is not durable yet.
// Where each checkpoint's superblock reached its place: the thread that
// passed the kill point after its sync.
struct InPlaceSyncs {
  static std::mutex mu;
  static std::vector<std::thread::id> threads;
  static void Note(std::string_view point) {
    if (point != "checkpoint: superblock synced") return;
    std::lock_guard<std::mutex> lock(mu);
    threads.push_back(std::this_thread::get_id());
  }
};
std::mutex InPlaceSyncs::mu;
std::vector<std::thread::id> InPlaceSyncs::threads;

// A checkpoint started by a write is completed in place (files synced,
// superblock written and synced) by the next checkpoint's thread, never
// by the writer: the writes that start checkpoints wait for no sync.
TEST(TableTest, TheNextCheckpointsThreadCompletesTheLastInPlace) {
  Options o = Posix();
  o.block_size = 1024;
  o.s0 = 4;
  o.checkpoint_bytes = 64 << 10;
  internal::SetKillHandler(&InPlaceSyncs::Note);
  const std::string dir = TempDir("complete");
  int puts = 0;
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    const uint64_t created = table->GetStats().checkpoints;
    {
      std::lock_guard<std::mutex> lock(InPlaceSyncs::mu);
      InPlaceSyncs::threads.clear();
    }
    int i = 0;
    for (; table->GetStats().checkpoints < created + 4 && i < 200000; ++i) {
      ASSERT_TRUE(table->Put("key" + std::to_string(i % 3000),
                             "value" + std::to_string(i))
                      .ok());
    }
    puts = i;
    const uint64_t started = table->GetStats().checkpoints - created;
    ASSERT_GE(started, 4u) << "no checkpoints after " << i << " puts";
    {
      std::lock_guard<std::mutex> lock(InPlaceSyncs::mu);
      // Each but the last is complete, on a thread other than this one.
      EXPECT_EQ(InPlaceSyncs::threads.size(), started - 1);
      for (const std::thread::id id : InPlaceSyncs::threads) {
        EXPECT_NE(id, std::this_thread::get_id());
      }
    }
    ASSERT_TRUE(table->Close().ok());
  }
  internal::SetKillHandler(nullptr);
  auto reopened = OpenOrDie(o, dir);
  ASSERT_NE(reopened, nullptr);
  EXPECT_TRUE(reopened->Check().ok());
  EXPECT_EQ(*reopened->Count(), static_cast<uint64_t>(std::min(puts, 3000)));
  ASSERT_TRUE(reopened->Close().ok());
  ASSERT_TRUE(DestroyTable(dir).ok());
}

TEST(TableTest, CheckpointsWriteBesideTheWriters) {
  Gate gate;
  Options o = Posix();
  o.block_size = 1024;
  o.s0 = 4;
  o.checkpoint_bytes = 64 << 10;  // a checkpoint every thousand puts or so
  const internal::FileOpener gated_files = [&gate](const std::string& path,
                                                  const io::DeviceOptions& d)
      -> absl::StatusOr<std::unique_ptr<io::BlockDevice>> {
    auto device = io::OpenBlockDevice(path, d);
    if (!device.ok()) return device;
    // The block file ("blocks", or its name while a new table is made),
    // the journal, the log's two files.
    const std::string name = path.substr(path.rfind('/') + 1);
    const int counted = name == "wal"       ? 0
                        : name == "wal.1"   ? 1
                        : name == "journal" ? 2
                                            : -1;
    const bool gated = name == "journal" || absl::StartsWith(name, "blocks");
    if (!gated && counted < 0) return device;
    return std::make_unique<GatedDevice>(*std::move(device), &gate, gated,
                                         counted);
  };
  const std::string dir = TempDir("inplace");
  auto opened = Table::Impl::Open(o, dir, gated_files);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Table> table = *std::move(opened);
  std::map<std::string, std::string> model;
  const int keys = 200;
  auto put = [&](int i, const std::string& value, bool sync = false) {
    const std::string key = "key" + std::to_string(i % keys);
    WriteOptions w;
    w.sync = sync;
    ASSERT_TRUE(table->Put(key, value, w).ok());
    model[key] = value;
  };
  for (int i = 0; i < keys; ++i) put(i, "first");
  ASSERT_TRUE(table->Checkpoint().ok());

  gate.Close();
  const int journal_syncs = gate.journal_syncs();
  // Puts until one is logged to the second log file: a checkpoint started
  // and moved the writers there (the checkpoints before stayed in the first
  // one: they were complete). Its thread then reaches the gate with its
  // journal.
  int i = 0;
  for (; gate.log_writes(1) == 0 && i < 100000; ++i) {
    put(i, "second" + std::to_string(i));
  }
  ASSERT_GT(gate.log_writes(1), 0) << "no checkpoint";
  for (int wait = 0; gate.waiting() == 0 && wait < 5000; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(gate.waiting(), 0) << "the checkpoint wrote no journal";
  for (int j = 0; j < 20; ++j) put(i + j, "third" + std::to_string(j));
  const int log_syncs[2] = {gate.log_syncs(0), gate.log_syncs(1)};
  put(i + 20, "synced", /*sync=*/true);
  EXPECT_GT(gate.log_syncs(0), log_syncs[0]);
  EXPECT_GT(gate.log_syncs(1), log_syncs[1]);
  for (const auto& [key, value] : model) {
    auto got = table->Get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status();
    EXPECT_EQ(*got, value) << key;
  }
  EXPECT_EQ(gate.journal_syncs(), journal_syncs) << "the journal passed";
  EXPECT_FALSE(gate.timed_out()) << "the writer waited for the writes";
  // A crash of the process now: the files as they are, with no journal of
  // this checkpoint. Open replays both log files, the one the writers left
  // first, and loses nothing.
  const std::string crashed = dir + "_crash";
  std::filesystem::remove_all(crashed);
  std::filesystem::copy(dir, crashed);
  {
    Options c = Posix();
    c.block_size = o.block_size;
    c.s0 = o.s0;
    auto copy = OpenOrDie(c, crashed);
    ASSERT_NE(copy, nullptr);
    const TableStats st = copy->GetStats();
    EXPECT_FALSE(st.recovered_journal);
    // Every write since the last complete checkpoint: the loop's, 20 more
    // and the synced one.
    EXPECT_EQ(st.recovered_records, static_cast<uint64_t>(i) + 21);
    for (const auto& [key, value] : model) {
      EXPECT_EQ(*copy->Get(key), value) << key;
    }
    ASSERT_TRUE(copy->Close().ok());
  }
  std::filesystem::remove_all(crashed);
  gate.Open();

  ASSERT_TRUE(table->Sync().ok());
  EXPECT_FALSE(gate.timed_out());
  EXPECT_GT(gate.journal_syncs(), journal_syncs);
  // Once the journal is durable, a synced write syncs only the writers'
  // log file.
  const int after[2] = {gate.log_syncs(0), gate.log_syncs(1)};
  put(i + 21, "synced again", /*sync=*/true);
  EXPECT_EQ(gate.log_syncs(0) - after[0] + gate.log_syncs(1) - after[1], 1);
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  for (const auto& [key, value] : model) EXPECT_EQ(*table->Get(key), value);
}

// A bucket whose buffered puts would fill its block is drained there and
// then, with one read and write of its block: the buffer never holds more
// than about a block's worth for one bucket, however large its limit.
TEST(TableTest, BucketsThatFillABlockDrainAtOnce) {
  const Options o = SmallBlocksBuffered(uint64_t{64} << 20);
  const std::string dir = TempDir("fullbucket");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  const std::string value(40, 'v');
  const size_t per_block = (*o.block_size - 64) / (value.size() + 8);
  const int n = 5000;
  uint64_t most_per_bucket = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Put("key" + std::to_string(i), value).ok());
    const TableStats st = table->GetStats();
    most_per_bucket =
        std::max(most_per_bucket, st.buffered_records / st.buckets);
  }
  const TableStats st = table->GetStats();
  // Far below the limit, the buffer drained by itself, many puts a drain.
  EXPECT_LT(st.buffered_bytes, o.write_buffer_bytes / 64);
  EXPECT_GT(st.logical.buffer_drains, 0u);
  EXPECT_GT(st.records, static_cast<uint64_t>(n) / 2);
  EXPECT_LE(most_per_bucket, per_block);
  EXPECT_GT(
      static_cast<double>(st.logical.put_writes) / st.logical.buffer_drains,
      4.0)
      << "puts per drained bucket";
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().records, static_cast<uint64_t>(n));
  for (int i = 0; i < n; i += 37) {
    EXPECT_EQ(*table->Get("key" + std::to_string(i)), value);
  }
}

// A buffer over its limit drains one bucket at a time, in a sweep: the
// buffer stays near its limit, each drain applies every put its bucket
// gathered, and those are several per block. (Overwrites of a table that
// does not grow, so that no distribute takes the buffered puts first.)
TEST(TableTest, FullBufferDrainsBucketsInASweep) {
  Options o = Posix();
  o.block_size = 4096;
  o.s0 = 8;
  o.write_buffer_bytes = 512 << 10;  // about 2700 puts; the table is 700 blocks
  const std::string dir = TempDir("sweep");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        table->Put("key" + std::to_string(i), std::string(100, 'a')).ok());
  }
  ASSERT_TRUE(table->Flush().ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  const TableStats start = table->GetStats();
  std::mt19937_64 rng(3);
  uint64_t most = 0;
  for (int i = 0; i < n; ++i) {
    const int k = static_cast<int>(rng() % n);
    ASSERT_TRUE(
        table->Put("key" + std::to_string(k), std::string(100, 'b')).ok());
    most = std::max(most, table->GetStats().buffered_bytes);
  }
  const TableStats st = table->GetStats();
  EXPECT_EQ(st.logical.grows, start.logical.grows);
  const uint64_t drains =
      st.logical.buffer_drains - start.logical.buffer_drains;
  EXPECT_GT(drains, 0u);
  // The limit counts the records' bytes and their bookkeeping.
  EXPECT_LE(most, o.write_buffer_bytes);
  EXPECT_GT(st.buffered_bytes, o.write_buffer_bytes / 4);
  const uint64_t drained = st.logical.put_writes - start.logical.put_writes;
  EXPECT_GT(static_cast<double>(drained) / drains, 2.0)
      << "puts per drained bucket";
  EXPECT_LE(st.physical_blocks.blocks_read - start.physical_blocks.blocks_read,
            drains);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().records, static_cast<uint64_t>(n));
  ASSERT_TRUE(table->Check().ok()) << table->Check();
}

// A distribute rewrites its group's blocks anyway: the puts buffered for
// them go in at once, with no read of their own. With no cache, every block
// read of a growing table is a grow's or a sweep's.
TEST(TableTest, GrowsTakeTheBufferedPutsOfTheirBlocks) {
  const Options o = SmallBlocksBuffered(64 << 10);
  const std::string dir = TempDir("growdrain");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Put("key" + std::to_string(i), "value").ok());
    if (i % 5000 == 4999) ASSERT_TRUE(table->Checkpoint().ok());
  }
  const TableStats st = table->GetStats();
  const LogicalLedger& l = st.logical;
  EXPECT_GT(l.grows, 0u);
  EXPECT_GT(l.distribute_drains, 0u);
  EXPECT_LT(l.distribute_drains, l.buffer_drains);
  EXPECT_LE(st.physical_blocks.blocks_read,
            l.grow_reads + (l.buffer_drains - l.distribute_drains));
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  for (int i = 0; i < n; i += 37) {
    EXPECT_EQ(*table->Get("key" + std::to_string(i)), "value");
  }
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().records, static_cast<uint64_t>(n));
}

// Drained puts that replace records with smaller ones shrink the data, and
// a shrink rebuilds blocks whose buffered puts then go in: the bucket count
// follows the data after every write (the paranoid mode checks it).
TEST(TableTest, DrainsThatShrinkTheDataReleaseBuckets) {
  Options o = Posix();
  o.block_size = 512;
  o.s0 = 2;
  o.write_buffer_bytes = 2048;
  o.paranoid_checks = true;
  const std::string dir = TempDir("drainshrink");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        table->Put("key" + std::to_string(i), std::string(90, 'v')).ok())
        << i;
  }
  ASSERT_TRUE(table->Flush().ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  const uint64_t full = table->GetStats().buckets;
  for (int i = 0; i < n; ++i) {
    const absl::Status s = table->Put("key" + std::to_string(i), "v");
    ASSERT_TRUE(s.ok()) << i << ": " << s;
  }
  ASSERT_TRUE(table->Flush().ok());
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  const TableStats st = table->GetStats();
  EXPECT_GT(st.logical.shrinks, 0u);
  EXPECT_LT(st.buckets, full);
  EXPECT_EQ(st.records, static_cast<uint64_t>(n));
}

// The stash fraction a Poisson model of bucket loads predicts when blocks
// hold `capacity` records at utilisation `load`: E[max(0, X - B)] / lambda.
double PoissonStashFraction(double load, int capacity) {
  const double lambda = load * capacity;
  double p = std::exp(-lambda), over = 0;
  for (int k = 1; k < 10 * capacity; ++k) {
    p *= lambda / k;
    if (k > capacity) over += (k - capacity) * p;
  }
  return over / lambda;
}

TEST(TableTest, LoadedTableIsWellUtilisedWithTheStashThePoissonModelGives) {
  Options o = Posix();
  const std::string dir = TempDir("util");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  std::mt19937_64 rng(5);
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    // 16-byte keys and 100-byte values: 122 encoded bytes with the slot,
    // 33 a block.
    char key[17];
    std::snprintf(key, sizeof(key), "%016llx",
                  static_cast<unsigned long long>(rng()));
    ASSERT_TRUE(table->Put(key, std::string(100, 'v')).ok());
  }
  const TableStats s = table->GetStats();
  EXPECT_GE(s.utilization, 0.85);
  // With 33 records a block the stash cannot be tiny: a Poisson model of
  // bucket loads predicts about 3% at utilisation 0.9. The measurement must
  // agree with it within a factor of 2 either way.
  const double measured = static_cast<double>(s.stash_records) / s.records;
  const double predicted = PoissonStashFraction(s.utilization, 4064 / 122);
  std::printf("utilisation %.4f, stash %.4f of the records, predicted %.4f\n",
              s.utilization, measured, predicted);
  EXPECT_LT(measured, 2 * predicted) << measured << " vs " << predicted;
  EXPECT_GT(measured, predicted / 2) << measured << " vs " << predicted;
  ASSERT_TRUE(table->Check().ok()) << table->Check();
}

// With a record limit of B and records small enough for the bytes never to
// bind, the table runs in the paper's model: a block holds exactly B keys,
// m follows ceil(n / ((1 - epsilon) B)), and the stash is the overflow of
// the buckets' loads past B.
TEST(TableTest, RecordLimitMakesBlocksOfExactlyBKeys) {
  Options o;
  o.backend = io::Backend::kMemory;
  o.block_size = 1024;
  o.block_records = 6;
  o.s0 = 4;
  o.epsilon = 0.25;
  auto table = OpenOrDie(o, "in-memory");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->GetStats().block_records, 6u);
  std::map<uint64_t, uint64_t> loads_seen;
  for (uint64_t i = 1; i <= 3000; ++i) {
    ASSERT_TRUE(table->Put("key" + std::to_string(i), "v").ok());
    const TableStats s = table->GetStats();
    const uint64_t needed = static_cast<uint64_t>(std::ceil(i / (0.75 * 6)));
    ASSERT_EQ(s.buckets, std::max<uint64_t>(needed, *o.s0)) << i;
    if (i % 500 == 0) ASSERT_TRUE(table->Check().ok()) << table->Check();
  }
  // Every block holds at most 6 records, and a bucket has a stash list only
  // when its block holds exactly 6: so the stash is sum(max(0, load - 6)).
  auto it = table->NewIterator();
  std::map<std::string, int> seen;
  for (; it->Valid(); it->Next()) ++seen[std::string(it->key())];
  ASSERT_TRUE(it->status().ok());
  EXPECT_EQ(seen.size(), 3000u);
  const TableStats s = table->GetStats();
  EXPECT_GT(s.stash_records, 0u);
  // The bytes alone would have taken (1024 - 32) / 11 = 90 records a block.
  EXPECT_LT(s.buckets, 3000 / (0.75 * 6) + 2);
  EXPECT_NEAR(s.utilization, 3000 / (6.0 * s.buckets), 1e-9);
  // Deleting everything shrinks back to s0 buckets with no stash.
  for (uint64_t i = 1; i <= 3000; ++i) {
    ASSERT_TRUE(table->Delete("key" + std::to_string(i)).ok());
  }
  EXPECT_EQ(table->GetStats().buckets, o.s0);
  EXPECT_EQ(table->GetStats().stash_records, 0u);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
}

TEST(TableTest, RecordLimitIsPartOfTheLayout) {
  const std::string dir = TempDir("records");
  Options o = Posix();
  o.block_records = 10;
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Put("k", "v").ok());
  }
  auto layout = Table::ReadLayout(dir);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->block_records, 10u);
  Options other = o;
  other.block_records = 0;
  auto s = Table::Open(other, dir);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("block_records = 10"), std::string::npos)
      << s.status();
  auto table = OpenOrDie(*layout, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get("k"), "v");
}

// Opening an existing table needs no knowledge of its layout: a field left
// unset takes the stored value, one set to the stored value is accepted,
// and one set to another is InvalidArgument naming both.
TEST(TableTest, OpenTakesTheStoredLayoutUnlessAFieldIsGiven) {
  const std::string dir = TempDir("stored_layout");
  Options created = Posix();
  created.block_size = 1024;
  created.s0 = 8;
  created.epsilon = 0.25;
  created.hash_seed = 42;
  created.block_records = 12;
  {
    auto table = OpenOrDie(created, dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 500; ++i) {
      ASSERT_TRUE(table->Put(absl::StrCat("key", i), "value").ok());
    }
  }
  Options plain;  // nothing of the layout
  plain.create_if_missing = false;
  {
    auto table = OpenOrDie(plain, dir);
    ASSERT_NE(table, nullptr);
    const TableStats s = table->GetStats();
    EXPECT_EQ(s.block_size, 1024u);
    EXPECT_EQ(s.s0, 8u);
    EXPECT_EQ(s.epsilon, 0.25);
    EXPECT_EQ(s.block_records, 12u);
    // The stored seed places the keys: every one is found where it was put.
    for (int i = 0; i < 500; ++i) {
      ASSERT_EQ(*table->Get(absl::StrCat("key", i)), "value") << i;
    }
    EXPECT_TRUE(table->Check().ok()) << table->Check();
  }
  Options same = plain;
  same.block_size = 1024;
  same.epsilon = 0.25;
  EXPECT_NE(OpenOrDie(same, dir), nullptr);
  auto refused = [&](auto set, const std::string& named) {
    Options o = plain;
    set(o);
    auto t = Table::Open(o, dir);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument)
        << named << ": " << t.status();
    EXPECT_NE(t.status().message().find(named), std::string::npos)
        << t.status();
  };
  refused([](Options& o) { o.block_size = 4096; },
          "block_size = 1024, not 4096");
  refused([](Options& o) { o.s0 = 32; }, "s0 = 8, not 32");
  refused([](Options& o) { o.epsilon = 0.1; }, "epsilon = 0.25, not 0.1");
  refused([](Options& o) { o.hash_seed = 7; }, "hash_seed = 42, not 7");
  refused([](Options& o) { o.block_records = 0; },
          "block_records = 12, not 0");
  // A new table takes the defaults for what is not given.
  const std::string fresh = TempDir("default_layout");
  auto table = OpenOrDie(Posix(), fresh);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->GetStats().block_size, Options::kDefaultBlockSize);
  EXPECT_EQ(table->GetStats().s0, Options::kDefaultS0);
  EXPECT_EQ(table->GetStats().epsilon, Options::kDefaultEpsilon);
}

// Count() is exact whatever waits in the write buffer: new keys, keys it
// replaces in blocks and in the stash, keys written twice, deleted keys;
// also read-only, after a reopen that finds the buffer's copy.
TEST(TableTest, CountIsExactWithPutsInTheWriteBuffer) {
  const std::string dir = TempDir("count");
  Options o = SmallBlocksBuffered(64 << 10);
  // Frequent checkpoints: few blocks stay held, so most puts wait.
  o.checkpoint_bytes = 16 << 10;
  std::mt19937_64 rng(7);
  std::map<std::string, std::string> model;
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 6000; ++i) {
      const std::string key = absl::StrCat("key", rng() % 3000);
      if (rng() % 5 == 0) {
        ASSERT_TRUE(table->Delete(key).ok());
        model.erase(key);
      } else {
        const std::string value(rng() % 60, 'v');
        ASSERT_TRUE(table->Put(key, value).ok());
        model[key] = value;
      }
      if (i % 500 == 499) {
        auto count = table->Count();
        ASSERT_TRUE(count.ok()) << count.status();
        ASSERT_EQ(*count, model.size()) << i;
      }
    }
    const TableStats s = table->GetStats();
    EXPECT_GT(s.buffered_records, 0u);  // else the test proves nothing
    EXPECT_LT(s.records, model.size());
  }
  Options ro = o;
  ro.read_only = true;
  {
    auto table = OpenOrDie(ro, dir);
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(*table->Count(), model.size());
  }
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().records, model.size());
  EXPECT_EQ(*table->Count(), model.size());
  ASSERT_TRUE(table->Close().ok());
  EXPECT_EQ(table->Count().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// An in-memory table touches no file and starts empty every time.
TEST(TableTest, InMemoryTableHasNoFiles) {
  const std::string dir = TempDir("memory");
  Options o;
  o.backend = io::Backend::kMemory;
  o.block_size = 512;
  o.s0 = 2;
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 2000; ++i) {
      ASSERT_TRUE(table->Put("key" + std::to_string(i), "value").ok());
    }
    ASSERT_TRUE(table->Checkpoint().ok());
    EXPECT_EQ(*table->Get("key7"), "value");
    ASSERT_TRUE(table->Check().ok()) << table->Check();
    ASSERT_TRUE(table->Close().ok());
  }
  EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " was created";
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->GetStats().records, 0u);
  o.create_if_missing = false;
  EXPECT_EQ(Table::Open(o, dir).status().code(), absl::StatusCode::kNotFound);
}

TEST(TableTest, AKeyPastTheBoundIsRefusedAndNothingChanges) {
  const std::string dir = TempDir("oversize");
  auto table = OpenOrDie(Posix(), dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Put("a", "1").ok());
  const size_t limit = table->max_record_bytes();
  EXPECT_EQ(limit, (4096u - 32) / 4);
  // The longest key beside a 32-byte reference: a 4-byte slot, two length
  // bytes for the key, one for the reference.
  const size_t max_key = table->max_key_bytes();
  EXPECT_EQ(max_key, limit - 4 - 2 - 1 - 32);
  const std::string long_key(max_key + 1, 'k');
  const absl::Status s = table->Put(long_key, std::string(limit, 'x'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(absl::StrCat(max_key)), std::string::npos) << s;
  EXPECT_EQ(table->GetStats().records, 1u);
  EXPECT_EQ(table->GetStats().value_count, 0u);
  EXPECT_EQ(table->Get(long_key).status().code(),
            absl::StatusCode::kNotFound);
  // That key takes a value that fits inline beside it, and a key at the
  // bound a value of any size.
  EXPECT_TRUE(table->Put(long_key, "small").ok());
  EXPECT_EQ(*table->Get(long_key), "small");
  const std::string key(max_key, 'q');
  EXPECT_TRUE(table->Put(key, std::string(limit, 'x')).ok());
  EXPECT_EQ(*table->Get(key), std::string(limit, 'x'));
  EXPECT_EQ(table->GetStats().value_count, 1u);
  // The largest record that fits stays inline: 1 key byte, two length
  // bytes for the value, one for the key, a 4-byte slot.
  EXPECT_TRUE(table->Put("b", std::string(limit - 8, 'y')).ok());
  EXPECT_EQ(table->GetStats().value_count, 1u);
  EXPECT_TRUE(table->Put("c", std::string(limit - 7, 'y')).ok());
  EXPECT_EQ(table->GetStats().value_count, 2u);
  EXPECT_TRUE(table->Check().ok());
}

TEST(TableTest, OpenRefusesBadOptionsAndMismatches) {
  const std::string dir = TempDir("options");
  Options o = Posix();
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Put("k", "v").ok());
  }
  Options other = o;
  other.s0 = 16;
  auto s = Table::Open(other, dir);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("s0 = 32"), std::string::npos)
      << s.status();
  other = o;
  other.block_size = 8192;
  EXPECT_EQ(Table::Open(other, dir).status().code(),
            absl::StatusCode::kInvalidArgument);
  other = o;
  other.epsilon = 0.2;
  EXPECT_EQ(Table::Open(other, dir).status().code(),
            absl::StatusCode::kInvalidArgument);
  other = o;
  other.error_if_exists = true;
  EXPECT_EQ(Table::Open(other, dir).status().code(),
            absl::StatusCode::kAlreadyExists);
  other = o;
  other.epsilon = 0.9;
  EXPECT_EQ(Table::Open(other, TempDir("x")).status().code(),
            absl::StatusCode::kInvalidArgument);
  other = o;
  other.create_if_missing = false;
  EXPECT_EQ(Table::Open(other, TempDir("missing")).status().code(),
            absl::StatusCode::kNotFound);
  // The table is untouched by all of that.
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get("k"), "v");
  // A path that is a file.
  const std::string file = TempDir("file");
  close(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_EQ(Table::Open(o, file).status().code(),
            absl::StatusCode::kInvalidArgument);
  unlink(file.c_str());
}

TEST(TableTest, BatchWithAnOversizeRecordChangesNothing) {
  const std::string dir = TempDir("batch");
  auto table = OpenOrDie(Posix(), dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Put("keep", "1").ok());
  WriteBatch batch;
  batch.Put("a", "x");
  batch.Delete("keep");
  batch.Put("huge", std::string(5000, 'h'));  // out of line
  batch.Put(std::string(table->max_key_bytes() + 1, 'k'),
            std::string(5000, 'h'));  // a key too long to sit beside it
  EXPECT_EQ(table->Write(batch).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->GetStats().records, 1u);
  EXPECT_EQ(*table->Get("keep"), "1");
  EXPECT_EQ(table->Get("a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(table->Get("huge").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(table->GetStats().value_count, 0u);
  EXPECT_EQ(table->GetStats().value_file_bytes, 0u);
}

TEST(TableTest, MultiGetReadsEachBlockOnceInOneSubmission) {
  if (!io::UringAvailable()) GTEST_SKIP() << "no io_uring here";
  Options o;
  o.backend = io::Backend::kUring;
  o.block_cache_bytes = 0;
  o.write_buffer_bytes = 0;  // every record in its block
  o.s0 = 16;
  const std::string dir = TempDir("multiget");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  std::vector<std::string> keys;
  for (int i = 0; i < 12; ++i) {
    keys.push_back("key" + std::to_string(i));
    ASSERT_TRUE(table->Put(keys.back(), "v" + std::to_string(i)).ok());
  }
  // Written blocks stay in memory until a checkpoint; after it they are
  // read from the file.
  ASSERT_TRUE(table->Checkpoint().ok());
  keys.push_back("absent");
  keys.push_back("key3");  // twice: its block is still read once
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  const TableStats before = table->GetStats();
  const auto got = table->MultiGet(views);
  const TableStats after = table->GetStats();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(*got[i], "v" + std::to_string(i));
  EXPECT_EQ(got[12].status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*got[13], "v3");
  const uint64_t blocks =
      after.physical_blocks.blocks_read - before.physical_blocks.blocks_read;
  EXPECT_EQ(after.logical.get_reads - before.logical.get_reads, blocks);
  EXPECT_LE(blocks, 13u);
  EXPECT_GE(blocks, 2u);
  EXPECT_EQ(
      after.physical_blocks.submissions - before.physical_blocks.submissions,
      1u);
}

TEST(TableTest, WarmCacheAnswersReadsAndCheckpointsWriteHeldBlocks) {
  Options o = Posix();
  o.block_cache_bytes = 1 << 20;
  const std::string dir = TempDir("cache");
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(table->Put("k" + std::to_string(i), "v").ok());
  }
  EXPECT_GT(table->GetStats().held_blocks, 0u);
  const TableStats before = table->GetStats();
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(*table->Get("k" + std::to_string(i)), "v");
  }
  const TableStats after = table->GetStats();
  // Every block is held: 500 logical reads, no device read.
  EXPECT_EQ(after.logical.get_reads - before.logical.get_reads, 500u);
  EXPECT_EQ(after.physical_blocks.blocks_read,
            before.physical_blocks.blocks_read);
  EXPECT_EQ(after.held_hits - before.held_hits, 500u);
  EXPECT_EQ(after.cache_hits, before.cache_hits);
  ASSERT_TRUE(table->Checkpoint().ok());
  EXPECT_EQ(table->GetStats().held_blocks, 0u);
  EXPECT_EQ(table->GetStats().wal_bytes, 0u);
  // The checkpoint moved them to the cache.
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(*table->Get("k" + std::to_string(i)), "v");
  }
  EXPECT_EQ(table->GetStats().cache_hits - after.cache_hits, 500u);
  EXPECT_EQ(table->GetStats().physical_blocks.blocks_read,
            before.physical_blocks.blocks_read);
  // Reopened without a cache, the checkpointed blocks are all there, and
  // the log holds nothing to replay.
  table.reset();
  table = OpenOrDie(Posix(), dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  EXPECT_EQ(table->GetStats().records, 500u);
  EXPECT_EQ(table->GetStats().recovered_records, 0u);
}

TEST(TableTest, ReadOnlyRefusesWrites) {
  const std::string dir = TempDir("ro");
  {
    auto table = OpenOrDie(Posix(), dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Put("k", "v").ok());
  }
  Options ro = Posix();
  ro.read_only = true;
  auto table = OpenOrDie(ro, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get("k"), "v");
  EXPECT_EQ(table->Put("k", "w").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table->Delete("k").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*table->Get("k"), "v");
}

// Flips one byte of the file at `offset`.
void FlipByte(const std::string& file, uint64_t offset) {
  const int fd = open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c;
  ASSERT_EQ(pread(fd, &c, 1, offset), 1);
  c ^= 0x20;
  ASSERT_EQ(pwrite(fd, &c, 1, offset), 1);
  close(fd);
}

// A checkpoint writes each bucket block changed since the last one once,
// at a new place, and journals only the block map and the superblock
// beside the other files' few blocks: no bucket block goes through the
// journal. The table reopens whole, each block read where the map says.
TEST(TableTest, ACheckpointWritesEachChangedBlockOnce) {
  const std::string dir = TempDir("write_once");
  Options o = Posix();
  o.block_cache_bytes = 8 << 20;
  std::map<std::string, std::string> model;
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 20000; ++i) {
      model[absl::StrCat("k", i)] = std::string(40 + i % 50, 'a' + i % 26);
      ASSERT_TRUE(
          table->Put(absl::StrCat("k", i), model[absl::StrCat("k", i)]).ok());
    }
    ASSERT_TRUE(table->Checkpoint().ok());
    // Every block changed again: one overwrite in each of many buckets.
    for (int i = 0; i < 20000; i += 7) {
      model[absl::StrCat("k", i)] = std::string(40 + i % 50, 'z');
      ASSERT_TRUE(
          table->Put(absl::StrCat("k", i), model[absl::StrCat("k", i)]).ok());
    }
    const TableStats before = table->GetStats();
    ASSERT_TRUE(table->Checkpoint().ok());
    const TableStats after = table->GetStats();
    const uint64_t block_writes = after.physical_blocks.blocks_written -
                                  before.physical_blocks.blocks_written;
    const uint64_t journal_writes = after.physical_journal.blocks_written -
                                    before.physical_journal.blocks_written;
    // The changed blocks (most of the table's), and the superblock.
    EXPECT_GT(block_writes, after.buckets / 2);
    EXPECT_LE(block_writes, after.buckets + 2);
    // The descriptor, the map (one block: 4 KiB takes 508 places), the
    // stash copy's tail, the superblock, and the journal rewritten with
    // the superblock alone.
    EXPECT_LT(journal_writes, 12u) << after.buckets << " buckets";
    // The file holds the table and at most one checkpoint's moves.
    EXPECT_LE(std::filesystem::file_size(dir + "/blocks"),
              (2 + 2 * after.buckets) * 4096);
  }
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  for (const auto& [k, v] : model) ASSERT_EQ(*table->Get(k), v) << k;
  EXPECT_TRUE(table->Check().ok()) << table->Check();
}

// A file device that records the cuts (Resizes to fewer blocks) made of
// its file, and whether an explicit Checkpoint or Close was running.
class CutRecorder final : public ForwardingDevice {
 public:
  struct Cut {
    std::string path;
    uint64_t from, to;
    bool explicit_call;
    std::thread::id thread;
  };
  CutRecorder(std::unique_ptr<io::BlockDevice> inner, std::vector<Cut>* cuts,
              const std::atomic<bool>* explicit_call)
      : ForwardingDevice(std::move(inner)),
        cuts_(cuts),
        explicit_call_(explicit_call) {}

 protected:
  absl::Status DoResize(uint64_t num_blocks) override {
    const uint64_t from = inner().num_blocks();
    RT_RETURN_IF_ERROR(ForwardingDevice::DoResize(num_blocks));
    if (num_blocks < from) {
      std::lock_guard<std::mutex> lock(mu_);
      cuts_->push_back({path(), from, num_blocks, explicit_call_->load(),
                        std::this_thread::get_id()});
    }
    return absl::OkStatus();
  }

 private:
  std::vector<Cut>* const cuts_;
  const std::atomic<bool>* const explicit_call_;
  static inline std::mutex mu_;
};

// The checkpoints the table makes as it goes cut a file, on the writer's
// path, only where that frees more than an eighth of it and 1 MiB (each
// cut frees blocks, which a file system mounted with discard and no
// journal discards before the call returns): a table that fills and then
// mostly empties is cut back by them as its places move down, a few
// blocks at a time, while each such few are left. Creation, Checkpoint()
// and Close() cut each file to its end. Nothing is lost either way.
TEST(TableTest, CheckpointsAsItGoesCutOnlyPastASlack) {
  const std::string dir = TempDir("cuts");
  std::vector<CutRecorder::Cut> cuts;
  // Set while the table is created, checkpointed and closed.
  std::atomic<bool> explicit_call{true};
  const internal::FileOpener recorded =
      [&](const std::string& path, const io::DeviceOptions& d)
      -> absl::StatusOr<std::unique_ptr<io::BlockDevice>> {
    auto device = io::OpenBlockDevice(path, d);
    if (!device.ok()) return device;
    return std::make_unique<CutRecorder>(*std::move(device), &cuts,
                                         &explicit_call);
  };
  Options o = Posix();
  o.block_size = 1024;
  o.checkpoint_bytes = 256 << 10;
  std::map<std::string, std::string> model;
  {
    auto opened = Table::Impl::Open(o, dir, recorded);
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<Table> table = *std::move(opened);
    explicit_call = false;
    std::mt19937_64 rng(3);
    for (int i = 0; i < 40000; ++i) {
      const std::string key = absl::StrCat("k", i);
      model[key] = std::string(60 + rng() % 80, 'a' + i % 26);
      ASSERT_TRUE(table->Put(key, model[key]).ok());
    }
    for (int i = 0; i < 40000; ++i) {
      if (i % 10 == 0) continue;
      const std::string key = absl::StrCat("k", i);
      ASSERT_TRUE(table->Delete(key).ok());
      model.erase(key);
    }
    // Puts and deletes over the few keys left: the copies move a little.
    for (int i = 0; i < 20000; ++i) {
      const std::string key = absl::StrCat("k", 10 * (rng() % 4000));
      if (rng() % 2 == 0) {
        model[key] = std::string(60 + rng() % 80, 'q');
        ASSERT_TRUE(table->Put(key, model[key]).ok());
      } else {
        ASSERT_TRUE(table->Delete(key).ok());
        model.erase(key);
      }
    }
    explicit_call = true;
    ASSERT_TRUE(table->Checkpoint().ok());
    for (const auto& [k, v] : model) ASSERT_EQ(*table->Get(k), v) << k;
  }
  uint64_t as_it_goes = 0;
  for (const CutRecorder::Cut& c : cuts) {
    // The log files and the journal are cut by the checkpoints' thread.
    if (c.explicit_call || c.thread != std::this_thread::get_id()) continue;
    ++as_it_goes;
    EXPECT_GT(c.from - c.to, std::max<uint64_t>(c.to / 8, (1 << 20) / 1024))
        << "a cut of " << c.path << " from " << c.from << " to " << c.to
        << " blocks";
  }
  EXPECT_GT(as_it_goes, 0u) << "no checkpoint cut the emptied table's files";
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  for (const auto& [k, v] : model) ASSERT_EQ(*table->Get(k), v) << k;
  EXPECT_TRUE(table->Check().ok()) << table->Check();
}

TEST(TableTest, CorruptBlockIsDataLossNeverAWrongAnswer) {
  const std::string dir = TempDir("corrupt");
  Options o = Posix();
  o.s0 = 4;
  uint64_t block = 0;  // where bucket 2's block lies
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(table->Put("k" + std::to_string(i), "v").ok());
    }
    ASSERT_TRUE(table->Checkpoint().ok());
    for (int i = 0; i < 50 && block == 0; ++i) {
      const KeyLocation at = *table->Locate("k" + std::to_string(i));
      if (at.bucket == 2) block = at.block;
    }
  }
  ASSERT_GE(block, 2u);
  FlipByte(dir + "/blocks", block * 4096 + 40);
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  int data_loss = 0;
  for (int i = 0; i < 50; ++i) {
    auto got = table->Get("k" + std::to_string(i));
    if (got.ok()) {
      EXPECT_EQ(*got, "v");
    } else {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(got.status().message().find("bucket 2"), std::string::npos);
      ++data_loss;
    }
  }
  EXPECT_GT(data_loss, 0);
  EXPECT_EQ(table->Check().code(), absl::StatusCode::kDataLoss);
}

TEST(TableTest, ParanoidModeFailsTheWriteThatFindsAFault) {
  const std::string dir = TempDir("paranoid");
  Options o = Posix();
  o.s0 = 4;
  o.paranoid_checks = true;
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Put("a", "1").ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  // Damage the block of b's bucket behind the table's back (no cache: it
  // reads the disk).
  FlipByte(dir + "/blocks", table->Locate("b")->block * 4096 + 40);
  const absl::Status s = table->Put("b", "2");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
}

TEST(TableTest, CorruptSuperblocksAreDataLoss) {
  const std::string dir = TempDir("sb");
  {
    auto table = OpenOrDie(Posix(), dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Put("k", "v").ok());
  }
  FlipByte(dir + "/blocks", 10);
  FlipByte(dir + "/blocks", 4096 + 10);
  EXPECT_EQ(Table::Open(Posix(), dir).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(TableTest, OtherFormatVersionsAreRefused) {
  for (const uint32_t version : {internal::kOldestFormatVersion - 1,
                                 internal::kFormatVersion + 1}) {
    const std::string dir = TempDir("version");
    {
      auto table = OpenOrDie(Posix(), dir);
      ASSERT_NE(table, nullptr);
      ASSERT_TRUE(table->Put("k", "v").ok());
    }
    // Rewrite both superblocks with another format version.
    for (uint64_t slot = 0; slot < 2; ++slot) {
      const int fd = open((dir + "/blocks").c_str(), O_RDWR);
      ASSERT_GE(fd, 0);
      io::AlignedBuffer buffer(4096);
      ASSERT_EQ(pread(fd, buffer.data(), 4096, slot * 4096), 4096);
      auto sb = internal::DecodeSuperblock(buffer.span());
      if (sb.ok()) {
        sb->format_version = version;
        internal::EncodeSuperblock(*sb, buffer.span());
        ASSERT_EQ(pwrite(fd, buffer.data(), 4096, slot * 4096), 4096);
      }
      close(fd);
    }
    const std::string before = FileBytes(dir + "/blocks");
    auto s = Table::Open(Posix(), dir);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(
        s.status().message().find(absl::StrCat("format version ", version)),
        std::string::npos)
        << s.status();
    EXPECT_EQ(Table::ReadLayout(dir).status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(FileBytes(dir + "/blocks"), before) << "the table was changed";
    ASSERT_TRUE(DestroyTable(dir).ok());
  }
}

// Readers (Get, MultiGet, a walk) run while two writers put and delete
// their own keys, with a cache small enough to evict: every value read is
// one its writer wrote, and the end state is exact. The TSan build runs it.
TEST(TableTest, ConcurrentReadersAndWritersAgree) {
  const std::string dir = TempDir("concurrent");
  Options o;
  o.block_size = 1024;
  o.s0 = 4;
  o.block_cache_bytes = 16 * 1024;
  o.checkpoint_bytes = 128 * 1024;
  auto table = Table::Open(o, dir);
  ASSERT_TRUE(table.ok()) << table.status();
  constexpr int kWriters = 2, kKeys = 1500;
  auto key = [](int t, int i) { return absl::StrCat("w", t, "-", i); };
  // Every seventh value out of line: written without the lock while the
  // others read, freed by the deletes and its space reused.
  auto value = [](int t, int i) {
    const size_t size =
        i % 7 == 0 ? 3000 + (i * 13 + t) % 500 : 10 + (i * 13 + t) % 90;
    return std::string(size, static_cast<char>('a' + (i + t) % 26));
  };
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kKeys; ++i) {
        ASSERT_TRUE((*table)->Put(key(t, i), value(t, i)).ok());
        if (i % 5 == 4) ASSERT_TRUE((*table)->Delete(key(t, i - 2)).ok());
      }
    });
  }
  auto check = [&](std::string_view k, std::string_view v) {
    int t = 0, i = 0;
    ASSERT_EQ(std::sscanf(std::string(k).c_str(), "w%d-%d", &t, &i), 2) << k;
    EXPECT_EQ(v, value(t, i)) << k;
  };
  threads.emplace_back([&] {
    std::mt19937_64 rng(1);
    while (!done) {
      const std::string k = key(rng() % kWriters, rng() % kKeys);
      auto v = (*table)->Get(k);
      if (v.ok()) {
        check(k, *v);
      } else {
        EXPECT_TRUE(absl::IsNotFound(v.status())) << v.status();
      }
    }
  });
  threads.emplace_back([&] {
    std::mt19937_64 rng(2);
    while (!done) {
      std::vector<std::string> keys;
      for (int j = 0; j < 8; ++j)
        keys.push_back(key(rng() % kWriters, rng() % kKeys));
      std::vector<std::string_view> views(keys.begin(), keys.end());
      const auto got = (*table)->MultiGet(views);
      for (size_t j = 0; j < keys.size(); ++j) {
        if (got[j].ok()) check(keys[j], *got[j]);
      }
      for (auto it = (*table)->NewIterator(); it->Valid(); it->Next()) {
        check(it->key(), it->value());
      }
    }
  });
  for (int t = 0; t < kWriters; ++t) threads[t].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  ASSERT_TRUE((*table)->Check().ok());
  for (int t = 0; t < kWriters; ++t) {
    for (int i = 0; i < kKeys; ++i) {
      auto v = (*table)->Get(key(t, i));
      const bool deleted = i % 5 == 2;
      if (deleted) {
        EXPECT_TRUE(absl::IsNotFound(v.status())) << key(t, i);
      } else {
        ASSERT_TRUE(v.ok()) << key(t, i) << v.status();
        EXPECT_EQ(*v, value(t, i));
      }
    }
  }
  ASSERT_TRUE((*table)->Close().ok());
  ASSERT_TRUE(DestroyTable(dir).ok());
}

}  // namespace
}  // namespace roundtable
