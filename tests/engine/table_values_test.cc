// Values of any size (docs/table.md, "Values of any size"): what a read of
// one costs, how the value file's space is reused, what a damaged extent
// does, and a table of the format before them taking them.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/coding.h"
#include "engine/internal/superblock.h"
#include "gtest/gtest.h"
#include "io/block_device.h"
#include "roundtable/table.h"
#include "tests/engine/table_dirs.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace roundtable {
namespace {

std::string TempDir(const std::string& tag) {
  return FreshTableDir("rt_values", tag);
}

std::unique_ptr<Table> OpenOrDie(const Options& o, const std::string& dir) {
  auto t = Table::Open(o, dir);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

// No cache and no write buffer: every read reaches the files.
Options Cold(io::Backend backend = io::Backend::kPosix) {
  Options o;
  o.backend = backend;
  o.block_cache_bytes = 0;
  o.write_buffer_bytes = 0;
  return o;
}

// `size` bytes that differ from every other call's.
std::string Value(size_t size, uint64_t seed) {
  std::string v(size, '\0');
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t r = rng();
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, size - i));
  }
  return v;
}

// The binary table_values_slow_test (label slow) holds the long tests
// alone.
#ifndef RT_SLOW_TESTS

TEST(TableValuesTest, AColdGetCostsOneBlockReadAndOneExtentRead) {
  const std::string dir = TempDir("ledger");
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  const std::vector<size_t> sizes = {1017, 4096, 65536, 1 << 20, 5 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(table->Put(absl::StrCat("k", i), Value(sizes[i], i)).ok());
  }
  // After a checkpoint no block is held in memory: each Get reads its block.
  ASSERT_TRUE(table->Checkpoint().ok());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const TableStats before = table->GetStats();
    auto got = table->Get(absl::StrCat("k", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, Value(sizes[i], i));
    const TableStats after = table->GetStats();
    EXPECT_EQ(after.physical_blocks.read_ops - before.physical_blocks.read_ops,
              1u)
        << sizes[i];
    EXPECT_EQ(after.physical_values.read_ops - before.physical_values.read_ops,
              1u)
        << sizes[i];
    EXPECT_EQ(
        after.physical_values.bytes_read - before.physical_values.bytes_read,
        (sizes[i] + 4095) / 4096 * 4096);
    EXPECT_EQ(after.logical.get_reads - before.logical.get_reads, 1u);
  }
  // A value over the request limit (16 MiB) takes a few requests, not one
  // per block.
  ASSERT_TRUE(table->Put("huge", Value(40 << 20, 99)).ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  const TableStats before = table->GetStats();
  auto got = table->Get("huge");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Value(40 << 20, 99));
  EXPECT_EQ(table->GetStats().physical_values.read_ops -
                before.physical_values.read_ops,
            3u);
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

TEST(TableValuesTest, MultiGetReadsEveryExtentInOneSubmission) {
  if (!io::UringAvailable()) GTEST_SKIP() << "no io_uring here";
  const std::string dir = TempDir("multiget");
  auto table = OpenOrDie(Cold(io::Backend::kUring), dir);
  ASSERT_NE(table, nullptr);
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i) {
    keys.push_back(absl::StrCat("key", i));
    ASSERT_TRUE(table->Put(keys.back(), Value(20000 + i * 1000, i)).ok());
  }
  ASSERT_TRUE(table->Put("small", "v").ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  keys.push_back("small");
  keys.push_back("absent");
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  const TableStats before = table->GetStats();
  const auto got = table->MultiGet(views);
  const TableStats after = table->GetStats();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    EXPECT_EQ(*got[i], Value(20000 + i * 1000, i));
  }
  EXPECT_EQ(*got[8], "v");
  EXPECT_EQ(got[9].status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(after.physical_values.read_ops - before.physical_values.read_ops,
            8u);
  EXPECT_EQ(
      after.physical_values.submissions - before.physical_values.submissions,
      1u);
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// An extent freed by an overwrite or a delete is reused only once a
// checkpoint that no longer refers to it is durable; then it is, and the
// file does not grow.
TEST(TableValuesTest, FreedSpaceIsReusedAfterTheNextDurableCheckpoint) {
  const std::string dir = TempDir("reuse");
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  const size_t mib = 1 << 20;
  ASSERT_TRUE(table->Put("a", Value(mib, 1)).ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  EXPECT_EQ(table->GetStats().value_file_bytes, mib);
  // The overwrite takes new space: the last checkpoint still refers to the
  // old value, which a crash would bring back.
  ASSERT_TRUE(table->Put("a", Value(mib, 2)).ok());
  EXPECT_EQ(table->GetStats().value_file_bytes, 2 * mib);
  EXPECT_EQ(table->GetStats().value_free_bytes, mib);
  ASSERT_TRUE(table->Put("b", Value(mib, 3)).ok());
  EXPECT_EQ(table->GetStats().value_file_bytes, 3 * mib);
  ASSERT_TRUE(table->Checkpoint().ok());
  // Now the first value's extent is reused.
  ASSERT_TRUE(table->Put("c", Value(mib, 4)).ok());
  EXPECT_EQ(table->GetStats().value_file_bytes, 3 * mib);
  EXPECT_EQ(table->GetStats().value_free_bytes, 0u);
  // Deleting every value, then writing as many again: no growth.
  for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(table->Delete(k).ok());
  EXPECT_EQ(table->GetStats().value_count, 0u);
  ASSERT_TRUE(table->Checkpoint().ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(table->Put(absl::StrCat("n", i), Value(mib, 10 + i)).ok());
  }
  EXPECT_EQ(table->GetStats().value_file_bytes, 3 * mib);
  // Smaller values fill a freed run's parts.
  ASSERT_TRUE(table->Delete("n1").ok());
  ASSERT_TRUE(table->Checkpoint().ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(table->Put(absl::StrCat("q", i), Value(mib / 4, 20 + i)).ok());
  }
  EXPECT_EQ(table->GetStats().value_file_bytes, 3 * mib);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  EXPECT_EQ(table->GetStats().value_count, 6u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(*table->Get(absl::StrCat("q", i)), Value(mib / 4, 20 + i));
  }
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// Random overwrites of 1 MiB values, with the default options: the value
// file stays within 1.5 times the live values.
TEST(TableValuesTest, AChurnOfOverwritesKeepsTheFileNearTheLiveData) {
  const std::string dir = TempDir("churn");
  auto table = OpenOrDie(Options(), dir);
  ASSERT_NE(table, nullptr);
  const size_t mib = 1 << 20;
  const int keys = 64;
  std::mt19937_64 rng(5);
  std::string value(mib, 'v');
  uint64_t most = 0;
  for (int i = 0; i < 640; ++i) {
    const int k = i < keys ? i : static_cast<int>(rng() % keys);
    value[0] = static_cast<char>(i);
    ASSERT_TRUE(table->Put(absl::StrCat("key", k), value).ok());
    const TableStats st = table->GetStats();
    if (i >= keys) most = std::max(most, st.value_file_bytes);
  }
  const TableStats st = table->GetStats();
  EXPECT_EQ(st.value_bytes, keys * mib);
  std::printf(
      "576 overwrites of %d values of 1 MiB: the value file at most "
      "%.3f times the values\n",
      keys, static_cast<double>(most) / (keys * mib));
  EXPECT_LE(static_cast<double>(most), 1.5 * keys * mib)
      << most / mib << " MiB for " << keys << " MiB of values";
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// Without sync, a value of 64 KiB and more is written once: to its extent,
// never through the log or the journal.
TEST(TableValuesTest, LargeValuesAreWrittenOnce) {
  const std::string dir = TempDir("amplification");
  auto table = OpenOrDie(Options(), dir);
  ASSERT_NE(table, nullptr);
  const size_t n = 300, size = 64 << 10;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Put(absl::StrCat("key", i), Value(size, i)).ok());
  }
  ASSERT_TRUE(table->Checkpoint().ok());
  const TableStats st = table->GetStats();
  const uint64_t written =
      st.physical_blocks.bytes_written + st.physical_stash.bytes_written +
      st.physical_wal.bytes_written + st.physical_journal.bytes_written +
      st.physical_buffer.bytes_written + st.physical_values.bytes_written +
      st.physical_spacemap.bytes_written + st.physical_blockmap.bytes_written;
  const double amplification = static_cast<double>(written) / (n * size);
  std::printf(
      "write amplification of %zu values of %zu bytes: %.4f (bytes written: "
      "block file %llu, stash copy %llu, log %llu, journal %llu, write "
      "buffer copy %llu, values %llu, space map %llu)\n",
      n, size, amplification,
      (unsigned long long)st.physical_blocks.bytes_written,
      (unsigned long long)st.physical_stash.bytes_written,
      (unsigned long long)st.physical_wal.bytes_written,
      (unsigned long long)st.physical_journal.bytes_written,
      (unsigned long long)st.physical_buffer.bytes_written,
      (unsigned long long)st.physical_values.bytes_written,
      (unsigned long long)st.physical_spacemap.bytes_written);
  EXPECT_LE(amplification, 1.5) << written << " bytes written";
  EXPECT_EQ(st.physical_values.bytes_written, n * size);
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// A damaged extent: Get is DataLoss naming the key's bucket, never other
// bytes; Check finds it; the other values read on.
TEST(TableValuesTest, ADamagedExtentIsDataLossNamingTheBucket) {
  const std::string dir = TempDir("damage");
  {
    auto table = OpenOrDie(Cold(), dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Put("first", Value(10000, 1)).ok());
    ASSERT_TRUE(table->Put("second", Value(10000, 2)).ok());
    ASSERT_TRUE(table->Close().ok());
  }
  {
    // The first value's extent starts the file: flip a byte of it.
    const int fd = open((dir + "/values").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(pread(fd, &c, 1, 5000), 1);
    c ^= 0x10;
    ASSERT_EQ(pwrite(fd, &c, 1, 5000), 1);
    close(fd);
  }
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  const absl::Status s = table->Get("first").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("bucket "), std::string::npos) << s;
  EXPECT_EQ(*table->Get("second"), Value(10000, 2));
  const std::vector<std::string_view> keys = {"first", "second"};
  const auto got = table->MultiGet(keys);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*got[1], Value(10000, 2));
  EXPECT_EQ(table->Check().code(), absl::StatusCode::kDataLoss);
  // An iterator ends with the error rather than yield other bytes.
  auto it = table->NewIterator();
  for (; it->Valid(); it->Next()) EXPECT_NE(it->key(), "first");
  EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  // Overwriting the damaged value mends the table.
  ASSERT_TRUE(table->Put("first", "small").ok());
  EXPECT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// A value that has the form of a reference is stored out of line too, so
// that no stored value is ambiguous.
TEST(TableValuesTest, AValueShapedLikeAReferenceIsStoredOutOfLine) {
  const std::string dir = TempDir("shape");
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  std::string tricky(32, '\0');
  const char mark[8] = {'\xff', 'R', 'T', 'X', '\0', '\xa5', '\x5a', '\x01'};
  std::memcpy(tricky.data(), mark, 8);
  internal::PutFixed64(tricky.data() + 8, 0);
  internal::PutFixed64(tricky.data() + 16, 1000);
  ASSERT_TRUE(table->Put("k", tricky).ok());
  EXPECT_EQ(table->GetStats().value_count, 1u);
  EXPECT_EQ(*table->Get("k"), tricky);
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get("k"), tricky);
  EXPECT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// Rewrites both superblocks of the table at `dir` (4 KiB blocks) in an
// older format's layout: the same fields up to its end, the checksum
// there (version 8 ends before the reserved bucket count, at byte 136;
// version 7 also before the value fields, at 112, and has no value file).
void MakeVersion(const std::string& dir, uint32_t version) {
  const size_t end = version == 7 ? 112 : 136;
  // Before version 10, bucket b's block is block b + 2: the blocks moved
  // there from the places the block map gives them, and the map gone.
  {
    std::string blocks(std::filesystem::file_size(dir + "/blocks"), '\0');
    std::string map(std::filesystem::file_size(dir + "/blockmap"), '\0');
    for (auto [name, bytes] :
         {std::pair{"/blocks", &blocks}, std::pair{"/blockmap", &map}}) {
      const int in = open((dir + name).c_str(), O_RDONLY);
      ASSERT_EQ(pread(in, bytes->data(), bytes->size(), 0),
                static_cast<ssize_t>(bytes->size()));
      close(in);
    }
    // The newer superblock copy's bucket count.
    const char* sb = blocks.data();
    if (internal::GetFixed64(sb + 4096 + 80) > internal::GetFixed64(sb + 80)) {
      sb += 4096;
    }
    const uint64_t m = internal::GetFixed64(sb + 40);
    std::string identity = blocks.substr(0, 2 * 4096);
    for (uint64_t b = 0; b < m; ++b) {
      const uint64_t place = internal::GetFixed64(map.data() + b / 508 * 4096 +
                                                  32 + 8 * (b % 508));
      identity += blocks.substr(place * 4096, 4096);
    }
    const int out = open((dir + "/blocks").c_str(), O_WRONLY | O_TRUNC);
    ASSERT_EQ(write(out, identity.data(), identity.size()),
              static_cast<ssize_t>(identity.size()));
    close(out);
    std::filesystem::remove(dir + "/blockmap");
  }
  const int fd = open((dir + "/blocks").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (uint64_t slot = 0; slot < 2; ++slot) {
    io::AlignedBuffer buffer(4096);
    ASSERT_EQ(pread(fd, buffer.data(), 4096, slot * 4096), 4096);
    char* p = reinterpret_cast<char*>(buffer.data());
    if (internal::GetFixed32(p) != internal::kSuperblockMagic) continue;
    internal::PutFixed32(p + 4, version);
    std::memset(p + end, 0, 4096 - end);
    internal::PutFixed64(p + end, XXH3_64bits(p, end));
    ASSERT_EQ(pwrite(fd, buffer.data(), 4096, slot * 4096), 4096);
  }
  close(fd);
  if (version == 7) {
    std::filesystem::remove(dir + "/values");
    std::filesystem::remove(dir + "/spacemap");
  }
}

// The format version of the newer superblock copy of the table at `dir`.
uint32_t FormatVersion(const std::string& dir) {
  const int fd = open((dir + "/blocks").c_str(), O_RDONLY);
  uint32_t version = 0;
  uint64_t newest = 0;
  for (uint64_t slot = 0; slot < 2; ++slot) {
    char p[4096];
    if (pread(fd, p, 4096, slot * 4096) != 4096) break;
    if (internal::GetFixed32(p) != internal::kSuperblockMagic) continue;
    if (internal::GetFixed64(p + 80) >= newest) {  // the sequence number
      newest = internal::GetFixed64(p + 80);
      version = internal::GetFixed32(p + 4);
    }
  }
  close(fd);
  return version;
}

TEST(TableValuesTest, ATableOfFormatVersion8OpensAndUpgrades) {
  const std::string dir = TempDir("version8");
  {
    auto table = OpenOrDie(Cold(), dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(table->Put(absl::StrCat("k", i), absl::StrCat("v", i)).ok());
    }
    ASSERT_TRUE(table->Put("large", Value(100000, 3)).ok());
    ASSERT_TRUE(table->Close().ok());
  }
  MakeVersion(dir, 8);
  {
    Options ro = Cold();
    ro.read_only = true;
    auto table = OpenOrDie(ro, dir);
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(*table->Get("large"), Value(100000, 3));
    EXPECT_EQ(table->GetStats().min_buckets, 0u);
    EXPECT_TRUE(table->Check().ok()) << table->Check();
  }
  EXPECT_EQ(FormatVersion(dir), 8u);  // read-only: left as it was
  {
    auto table = OpenOrDie(Cold(), dir);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->Reserve(5000, 4, 4).ok());
    ASSERT_TRUE(table->Close().ok());
  }
  EXPECT_EQ(FormatVersion(dir), internal::kFormatVersion);
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get("k99"), "v99");
  EXPECT_EQ(*table->Get("large"), Value(100000, 3));
  EXPECT_GT(table->GetStats().min_buckets, 0u);
  EXPECT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

TEST(TableValuesTest, ATableOfFormatVersion7OpensAndTakesLargeValues) {
  const std::string dir = TempDir("version7");
  {
    auto table = OpenOrDie(Cold(), dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(table->Put(absl::StrCat("k", i), absl::StrCat("v", i)).ok());
    }
    ASSERT_TRUE(table->Close().ok());
  }
  MakeVersion(dir, 7);
  {
    // Read-only: nothing created or changed.
    Options ro = Cold();
    ro.read_only = true;
    auto table = OpenOrDie(ro, dir);
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(*table->Get("k5"), "v5");
    EXPECT_TRUE(table->Check().ok()) << table->Check();
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/values"));
  {
    auto table = OpenOrDie(Cold(), dir);
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(*table->Get("k5"), "v5");
    ASSERT_TRUE(table->Put("large", Value(100000, 7)).ok());
    ASSERT_TRUE(table->Close().ok());
  }
  auto sb = Table::ReadLayout(dir);
  ASSERT_TRUE(sb.ok());
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get("large"), Value(100000, 7));
  EXPECT_EQ(*table->Get("k99"), "v99");
  EXPECT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

#else  // RT_SLOW_TESTS

// Free bytes of the file system under `dir`.
uint64_t FreeBytes(const std::string& dir) {
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

// Values of 64 MiB, and one of 1 GiB where the disk and memory allow
// (label slow).
TEST(TableValuesSlowTest, ValuesTo64MiBAndOneOf1GiB) {
  const std::string dir = TempDir("huge");
  auto table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  for (const size_t size : {size_t{8} << 20, size_t{64} << 20}) {
    ASSERT_TRUE(table->Put(absl::StrCat("k", size), Value(size, size)).ok());
  }
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(Cold(), dir);
  ASSERT_NE(table, nullptr);
  for (const size_t size : {size_t{8} << 20, size_t{64} << 20}) {
    EXPECT_EQ(*table->Get(absl::StrCat("k", size)), Value(size, size));
  }
  const size_t gib = size_t{1} << 30;
  if (FreeBytes(dir) < 3 * gib) {
    std::printf("skipping the 1 GiB value: %llu bytes free under %s\n",
                static_cast<unsigned long long>(FreeBytes(dir)), dir.c_str());
  } else {
    const std::string huge = Value(gib - 1, 1);
    ASSERT_TRUE(table->Put("gib", huge, {.sync = true}).ok());
    std::string got;
    ASSERT_TRUE(table->Get("gib", &got).ok());
    EXPECT_TRUE(got == huge);
    ASSERT_TRUE(table->Delete("gib").ok());
  }
  EXPECT_TRUE(table->Check().ok()) << table->Check();
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

#endif  // RT_SLOW_TESTS

}  // namespace
}  // namespace roundtable
