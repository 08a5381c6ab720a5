// Tables whose files the table did not write, with valid checksums: every
// field of the superblock at its extremes, log records the table would
// refuse, journal images past their files' ends, stash-copy records past
// the block's limit, and random bytes as the log. Each is opened writable
// and read-only, read and checked: a status (DataLoss, InvalidArgument,
// FailedPrecondition) or a working table, never an abort, a huge
// allocation, a hang, or a write that destroys the table.
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "engine/internal/journal.h"
#include "engine/internal/stash_log.h"
#include "engine/internal/superblock.h"
#include "engine/internal/table_files.h"
#include "engine/internal/wal.h"
#include "roundtable/table.h"
#include "gtest/gtest.h"
#include "io/block_device.h"

namespace roundtable {
namespace {

namespace fs = std::filesystem;
using internal::Superblock;

constexpr uint32_t kBlock = 512;
constexpr int kKeys = 300;

// Every layout field given, as its creator knows them: a crafted
// superblock whose layout differs is then refused (InvalidArgument), where
// with a field left unset the stored value, crafted or not, would be taken
// as the table's (a tiny epsilon lets it shrink legitimately).
Options Layout() {
  Options o;
  o.block_size = kBlock;
  o.s0 = 4;
  o.epsilon = Options::kDefaultEpsilon;
  o.block_records = Options::kDefaultBlockRecords;
  o.hash_seed = Options::kDefaultHashSeed;
  return o;
}

std::string Key(int i) { return absl::StrCat("key", i); }
std::string Value(int i) { return std::string(20 + i % 50, 'a' + i % 26); }

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A closed table of kKeys records (some in the stash) in a new directory.
std::string MakeTable(const std::string& tag) {
  static int counter = 0;
  const std::string dir =
      absl::StrCat("/tmp/rt_crafted_", tag, "_", getpid(), "_", counter++);
  fs::remove_all(dir);
  auto t = Table::Open(Layout(), dir);
  EXPECT_TRUE(t.ok()) << t.status();
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_TRUE((*t)->Put(Key(i), Value(i)).ok());
  }
  EXPECT_TRUE((*t)->Close().ok());
  return dir;
}

std::unique_ptr<io::BlockDevice> OpenFile(const std::string& path) {
  io::DeviceOptions o;
  o.backend = io::Backend::kPosix;
  o.block_size = kBlock;
  auto d = io::OpenBlockDevice(path, o);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

// The newest superblock of the table at `dir`.
Superblock ReadSuperblock(const std::string& dir) {
  auto blocks = OpenFile(dir + "/blocks");
  io::AlignedBuffer buffer(kBlock);
  Superblock best;
  for (uint64_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(blocks->Read(b, buffer.span()).ok());
    auto sb = internal::DecodeSuperblock(buffer.span());
    if (sb.ok() && sb->sequence >= best.sequence) best = *sb;
  }
  return best;
}

// Writes `sb` as both superblock copies, checksums valid.
void WriteSuperblock(const std::string& dir, const Superblock& sb) {
  auto blocks = OpenFile(dir + "/blocks");
  io::AlignedBuffer buffer(kBlock);
  internal::EncodeSuperblock(sb, buffer.span());
  for (uint64_t b = 0; b < 2; ++b) {
    ASSERT_TRUE(blocks->Write(b, buffer.span()).ok());
  }
}

bool Acceptable(const absl::Status& s) {
  return s.ok() || absl::IsDataLoss(s) || absl::IsInvalidArgument(s) ||
         absl::IsFailedPrecondition(s) || absl::IsNotFound(s) ||
         absl::IsOutOfRange(s) || absl::IsResourceExhausted(s);
}

// Opens the table at `dir` writable and read-only; reads every key, walks
// and checks it, and writes through a writable one. Every status must be
// one of the acceptable ones, every value one that was written. Returns
// whether some open succeeded.
bool Exercise(const std::string& dir) {
  bool opened = false;
  for (const bool read_only : {true, false}) {
    SCOPED_TRACE(read_only ? "read-only" : "writable");
    Options o = Layout();
    o.create_if_missing = false;
    o.read_only = read_only;
    auto t = Table::Open(o, dir);
    EXPECT_TRUE(Acceptable(t.status())) << t.status();
    if (!t.ok()) continue;
    opened = true;
    for (int i = 0; i < kKeys; ++i) {
      auto v = (*t)->Get(Key(i));
      EXPECT_TRUE(v.ok() || Acceptable(v.status())) << v.status();
      if (v.ok()) EXPECT_EQ(*v, Value(i));
    }
    int walked = 0;
    auto it = (*t)->NewIterator();
    for (; it->Valid() && walked < 10 * kKeys; it->Next()) ++walked;
    EXPECT_TRUE(Acceptable(it->status())) << it->status();
    EXPECT_TRUE(Acceptable((*t)->Check()));
    if (!read_only) {
      EXPECT_TRUE(Acceptable((*t)->Put("new", "value")));
      EXPECT_TRUE(Acceptable((*t)->Delete(Key(1))));
    }
    EXPECT_TRUE(Acceptable((*t)->Close()));
  }
  return opened;
}

// Opening the table at `dir`, read-only and writable, is DataLoss.
void ExpectDataLoss(const std::string& dir) {
  for (const bool read_only : {true, false}) {
    Options o = Layout();
    o.create_if_missing = false;
    o.read_only = read_only;
    auto t = Table::Open(o, dir);
    ASSERT_FALSE(t.ok()) << (read_only ? "read-only" : "writable");
    EXPECT_TRUE(absl::IsDataLoss(t.status())) << t.status();
  }
}

// The bytes of the table's data files but the journal.
std::vector<std::string> FilesButTheJournal(const std::string& dir) {
  std::vector<std::string> bytes;
  for (const char* f : internal::kDataFiles) {
    if (std::string(f) != internal::kJournalFile) {
      bytes.push_back(FileBytes(dir + "/" + f));
    }
  }
  return bytes;
}

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(TableCraftedTest, EverySuperblockFieldAtItsExtremes) {
  const std::string pristine = MakeTable("sb");
  const Superblock sb = ReadSuperblock(pristine);
  const std::vector<uint64_t> extremes = {0,        1,        2,
                                          kMax,     kMax - 1, kMax / 2 + 1,
                                          1u << 30, uint64_t{1} << 45};
  // Each field, by the way it is set.
  const std::vector<std::pair<const char*, std::function<void(Superblock&,
                                                              uint64_t)>>>
      fields = {
          {"block_size", [](Superblock& s, uint64_t v) {
             s.block_size = static_cast<uint32_t>(v);
           }},
          {"block_records", [](Superblock& s, uint64_t v) {
             s.block_records = static_cast<uint32_t>(v);
           }},
          {"s0", [](Superblock& s, uint64_t v) { s.s0 = v; }},
          {"num_buckets", [](Superblock& s, uint64_t v) { s.num_buckets = v; }},
          {"record_count",
           [](Superblock& s, uint64_t v) { s.record_count = v; }},
          {"data_bytes", [](Superblock& s, uint64_t v) { s.data_bytes = v; }},
          {"stash_epoch", [](Superblock& s, uint64_t v) { s.stash_epoch = v; }},
          {"stash_blocks",
           [](Superblock& s, uint64_t v) { s.stash_blocks = v; }},
          {"buffer_epoch",
           [](Superblock& s, uint64_t v) { s.buffer_epoch = v; }},
          {"buffer_blocks",
           [](Superblock& s, uint64_t v) { s.buffer_blocks = v; }},
          {"sequence", [](Superblock& s, uint64_t v) { s.sequence = v; }},
          {"wal_seq", [](Superblock& s, uint64_t v) { s.wal_seq = v; }},
          {"epsilon", [](Superblock& s, uint64_t v) {
             s.epsilon = std::bit_cast<double>(v);
           }},
      };
  const std::string dir = pristine + "_copy";
  for (const auto& [name, set] : fields) {
    for (const uint64_t v : extremes) {
      SCOPED_TRACE(absl::StrCat(name, " = ", v));
      fs::remove_all(dir);
      fs::copy(pristine, dir);
      Superblock crafted = sb;
      set(crafted, v);
      WriteSuperblock(dir, crafted);
      const uint64_t size = fs::file_size(dir + "/blocks");
      Exercise(dir);
      // Nothing cut the block file short.
      EXPECT_GE(fs::file_size(dir + "/blocks"),
                std::min<uint64_t>(size, (sb.num_buckets + 2) * kBlock));
    }
  }
  fs::remove_all(dir);
  fs::remove_all(pristine);
}

// Appends log records with `payloads` after the superblock's log number to
// the table's first log file.
void WriteLog(const std::string& dir, const std::vector<std::string>& payloads) {
  const Superblock sb = ReadSuperblock(dir);
  auto wal = OpenFile(dir + "/wal");
  internal::WalWriter writer(wal.get());
  ASSERT_TRUE(writer.Start(sb.wal_seq + 1, sb.wal_seq).ok());
  for (const std::string& p : payloads) ASSERT_TRUE(writer.Append(p).ok());
  ASSERT_TRUE(writer.Sync().ok());
}

// A log payload of one put (docs/format.md).
std::string PutPayload(const std::string& key, const std::string& value) {
  std::string out;
  char v[10];
  auto varint = [&](uint64_t n) {
    out.append(v, internal::PutVarint(v, n) - v);
  };
  varint(1);
  out.push_back(1);
  varint(key.size());
  out += key;
  varint(value.size());
  out += value;
  return out;
}

TEST(TableCraftedTest, LogRecordsTheTableWouldRefuseAreDataLoss) {
  const std::vector<std::pair<std::string, std::string>> records = {
      {"k", std::string(5000, 'v')},
      {std::string(60000, 'k'), "v"},
      {std::string(200, 'k'), std::string(200, 'v')},
  };
  for (const auto& [key, value] : records) {
    SCOPED_TRACE(absl::StrCat(key.size(), "-byte key, ", value.size(),
                              "-byte value"));
    const std::string dir = MakeTable("log");
    WriteLog(dir, {PutPayload("fine", "value"), PutPayload(key, value)});
    ExpectDataLoss(dir);
    fs::remove_all(dir);
  }
  // Framing at its extremes: op counts, lengths and kinds.
  std::vector<std::string> payloads = {
      std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10),
      std::string("\x01\x01\xff\xff\xff\xff\x0f", 7),
      std::string("\x01\x03\x01k", 4),
      std::string("\x02\x01\x01k\x01v\x02\x01", 8),
      std::string(),
  };
  for (const std::string& p : payloads) {
    const std::string dir = MakeTable("frame");
    WriteLog(dir, {p});
    Exercise(dir);
    fs::remove_all(dir);
  }
}

TEST(TableCraftedTest, JournalImagesPastTheirFilesAreDataLossAndChangeNothing) {
  for (const uint32_t file : {0u, 1u, 2u, 3u}) {
    for (const uint64_t block :
         {uint64_t{1} << 30, uint64_t{1} << 45, kMax, kMax - 1}) {
      SCOPED_TRACE(absl::StrCat("file ", file, " block ", block));
      const std::string dir = MakeTable("journal");
      Superblock next = ReadSuperblock(dir);
      ++next.sequence;
      io::AlignedBuffer image(kBlock), superblock(kBlock);
      internal::EncodeSuperblock(next, superblock.span());
      const std::vector<internal::JournalEntry> entries = {
          {file, block, image.span()},
          {0, next.slot(), superblock.span()}};
      {
        auto journal = OpenFile(dir + "/journal");
        ASSERT_TRUE(
            internal::WriteJournal(*journal, next.sequence, entries).ok());
      }
      const std::vector<std::string> before = FilesButTheJournal(dir);
      ExpectDataLoss(dir);
      EXPECT_TRUE(before == FilesButTheJournal(dir))
          << "a refused journal changed the files";
      // With the journal gone the table is whole again.
      fs::remove(dir + "/journal");
      Options o = Layout();
      o.create_if_missing = false;
      auto t = Table::Open(o, dir);
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(*(*t)->Get(Key(7)), Value(7));
      EXPECT_TRUE((*t)->Check().ok());
      ASSERT_TRUE((*t)->Close().ok());
      fs::remove_all(dir);
    }
  }
}

TEST(TableCraftedTest, StashCopyRecordsPastTheLimitAreDataLoss) {
  const std::string dir = MakeTable("stash");
  Superblock sb = ReadSuperblock(dir);
  {
    auto stash = OpenFile(dir + "/stash");
    ASSERT_TRUE(stash->Resize(0).ok());
    internal::StashLog log(stash.get(), sb.stash_epoch + 1, 0);
    ASSERT_TRUE(log.AppendPut(std::string(300, 'k'), "v").ok());
    ASSERT_TRUE(log.Flush().ok());
    sb.stash_epoch = log.epoch();
    sb.stash_blocks = log.blocks();
  }
  // The stash copy's blocks reach the file through the deferred layer in
  // the table; here it is the file itself.
  ASSERT_GT(sb.stash_blocks, 0u);
  sb.data_bytes += 310;
  sb.record_count += 1;
  WriteSuperblock(dir, sb);
  ExpectDataLoss(dir);
  fs::remove_all(dir);
}

TEST(TableCraftedTest, RandomBytesAsTheLogEndTheLogOrAreDataLoss) {
  for (const uint64_t mib : {1, 8, 32}) {
    SCOPED_TRACE(absl::StrCat(mib, " MiB"));
    const std::string dir = MakeTable("random");
    std::mt19937_64 rng(mib);
    std::string bytes(mib << 20, '\0');
    for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
      const uint64_t r = rng();
      std::memcpy(bytes.data() + i, &r, 8);
    }
    std::ofstream(dir + "/wal", std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_TRUE(Exercise(dir));
    fs::remove_all(dir);
  }
}

// Records whose headers all claim to vouch for a damaged one, each
// claiming the rest of the file: the search is bounded, and says so.
TEST(TableCraftedTest, ALogCraftedToDefeatTheSearchIsDataLossNotAHang) {
  const std::string dir = MakeTable("vouch");
  const Superblock sb = ReadSuperblock(dir);
  WriteLog(dir, {PutPayload("a", "1"), PutPayload("b", "2")});
  std::string wal = FileBytes(dir + "/wal");
  // The second record's payload damaged; then 4 MiB of headers, one every
  // byte, numbered after it with marks covering it.
  const size_t second = internal::kWalHeaderBytes + PutPayload("a", "1").size();
  wal[second + internal::kWalHeaderBytes] ^= 1;
  std::string tail(4 << 20, '\0');
  const uint64_t seq = sb.wal_seq + 3;
  for (size_t o = 0; o + 28 <= tail.size(); o += 28) {
    internal::PutFixed32(tail.data() + o,
                         static_cast<uint32_t>(tail.size() - o - 28));
    internal::PutFixed64(tail.data() + o + 4, seq);
    internal::PutFixed64(tail.data() + o + 12, sb.wal_seq + 2);
  }
  wal.resize((wal.size() / kBlock) * kBlock + kBlock);
  wal += tail;
  std::ofstream(dir + "/wal", std::ios::binary | std::ios::trunc) << wal;
  Options o = Layout();
  o.create_if_missing = false;
  o.read_only = true;
  auto t = Table::Open(o, dir);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsDataLoss(t.status())) << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), "too many records"))
      << t.status();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace roundtable
