// Encoded blocks edited in place (appends, removals, values replaced where
// they lie) against a std::map, sealed blocks verified,
// and every single-byte corruption caught; records kept in memory; tag
// filters pass every tag of their block; superblocks round-trip and refuse
// corruption.
#include "engine/internal/block_format.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/internal/superblock.h"
#include "gtest/gtest.h"
#include "io/block_device.h"

namespace roundtable::internal {
namespace {

// A tag with few values, so that lookups meet tag matches of other keys.
uint16_t TestTag(const std::string& key) {
  return static_cast<uint16_t>(std::hash<std::string>()(key) % 3);
}

TEST(EncodedBlockTest, EditsMatchAMapAndSealedBlocksVerify) {
  for (const uint32_t bs : {512u, 4096u, 65536u}) {
    std::mt19937_64 rng(bs);
    io::AlignedBuffer bytes(bs);
    EncodedBlock block(bytes.span());
    block.Init(7);
    std::map<std::string, std::string> model;
    size_t used = 0;
    for (int step = 0; step < 3000; ++step) {
      const std::string key = "k" + std::to_string(rng() % 40);
      const auto present = block.Find(key, TestTag(key));
      if (present && rng() % 4 == 0) {
        // A value of the same length, written where the old one lies.
        const std::string value(present->value.size(), 'a' + rng() % 26);
        block.ReplaceValue(*present, value);
        model[key] = value;
      } else if (rng() % 3) {
        const std::string value(rng() % (bs / 16), 'a' + rng() % 26);
        if (auto f = block.Find(key, TestTag(key))) {
          used -= f->size;
          block.Remove(*f);
          model.erase(key);
        }
        const bool fits = EncodedSize(key, value) <= block.room();
        ASSERT_EQ(block.Append(key, value, TestTag(key)), fits);
        if (fits) {
          model[key] = value;
          used += EncodedSize(key, value);
        }
      } else if (auto f = block.Find(key, TestTag(key))) {
        used -= f->size;
        block.Remove(*f);
        model.erase(key);
      }
      ASSERT_EQ(block.count(), model.size());
      ASSERT_EQ(block.used(), used);
      ASSERT_EQ(block.room(), bs - kBlockHeaderBytes - used);
      if (step % 100 == 0) {
        std::map<std::string, std::string> seen;
        block.ForEachTagged(
            [&](std::string_view k, std::string_view v, uint16_t tag) {
              seen.emplace(k, v);
              EXPECT_EQ(tag, TestTag(std::string(k)));
            });
        ASSERT_EQ(seen, model);
        for (const auto& [k, v] : model) {
          ASSERT_EQ(block.Find(k, TestTag(k))->value, v);
          // The tag filters: under another tag the key is not found.
          ASSERT_FALSE(block.Find(k, TestTag(k) + 3));
        }
        block.Seal();
        ASSERT_TRUE(VerifyBlock(bytes.span(), 7).ok());
        EXPECT_EQ(VerifyBlock(bytes.span(), 8).code(),
                  absl::StatusCode::kDataLoss);
      }
    }
  }
}

TEST(EncodedBlockTest, EveryFlippedByteIsDataLoss) {
  io::AlignedBuffer bytes(512);
  EncodedBlock block(bytes.span());
  block.Init(3);
  ASSERT_TRUE(block.Append("key", "value", 1));
  ASSERT_TRUE(block.Append("other", std::string(40, 'x'), 2));
  block.Seal();
  ASSERT_TRUE(VerifyBlock(bytes.span(), 3).ok());
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes.data()[i] ^= std::byte{0x10};
    EXPECT_EQ(VerifyBlock(bytes.span(), 3).code(), absl::StatusCode::kDataLoss)
        << "byte " << i;
    bytes.data()[i] ^= std::byte{0x10};
  }
}

// A block of many tiny records: the directory and the records meet in the
// middle, every byte is used, and one more record does not fit.
// CopyUnsealed copies every byte but the checkpoint and checksum fields
// (zero in the copy): stamping and sealing the copy gives the stamped and
// sealed original, byte for byte.
TEST(EncodedBlockTest, AnUnsealedCopySealsToTheOriginal) {
  io::AlignedBuffer original(1024), copy(1024);
  EncodedBlock block(original.span());
  block.Init(7);
  ASSERT_TRUE(block.Append("key", "value", 42));
  block.set_checkpoint(9);
  block.Seal();
  std::memset(copy.data(), 0xee, 1024);
  CopyUnsealed(original.span(), copy.span());
  for (size_t i = 0; i < 1024; ++i) {
    if (i >= 20 && i < 32) {
      EXPECT_EQ(copy.data()[i], std::byte{0}) << i;
    } else {
      EXPECT_EQ(copy.data()[i], original.data()[i]) << i;
    }
  }
  EXPECT_FALSE(VerifyBlock(copy.span(), 7).ok());
  EXPECT_EQ(EncodedBlock(copy.span()).checkpoint(), 0u);
  EncodedBlock(copy.span()).set_checkpoint(9);
  EncodedBlock(copy.span()).Seal();
  EXPECT_EQ(std::memcmp(copy.data(), original.data(), 1024), 0);
  EXPECT_TRUE(VerifyBlock(copy.span(), 7).ok());
}

TEST(EncodedBlockTest, DirectoryAndRecordsFillTheBlock) {
  io::AlignedBuffer bytes(512);
  EncodedBlock block(bytes.span());
  block.Init(0);
  int n = 0;
  // Each record: 2 length bytes, a 2-byte key, a 1-byte value, a 4-byte slot.
  while (block.Append(absl::StrCat(n % 10, n / 10), "v", n % 7)) ++n;
  EXPECT_EQ(n, (512 - kBlockHeaderBytes) / 9);
  EXPECT_EQ(block.used(), n * 9u);
  EXPECT_LT(block.room(), 9u);
  for (int i = 0; i < n; i += 2) {
    const std::string key = absl::StrCat(i % 10, i / 10);
    auto f = block.Find(key, i % 7);
    ASSERT_TRUE(f) << key;
    block.Remove(*f);
  }
  block.Seal();
  ASSERT_TRUE(VerifyBlock(bytes.span(), 0).ok());
  for (int i = 0; i < n; ++i) {
    const std::string key = absl::StrCat(i % 10, i / 10);
    EXPECT_EQ(block.Find(key, i % 7).has_value(), i % 2 == 1) << key;
  }
}

// A tag filter passes every tag added to it (here, of random sets of every
// size a block takes) and rules out most others once its block is sparse.
TEST(TagFilterTest, PassesEveryAddedTag) {
  std::mt19937_64 rng(17);
  EXPECT_FALSE(TagFilter().MayContain(0));
  EXPECT_TRUE(TagFilter::All().MayContain(0x1234));
  uint64_t absent = 0, passed = 0;
  for (int n = 0; n <= 200; ++n) {
    TagFilter filter;
    std::vector<uint16_t> tags(n);
    for (uint16_t& t : tags) {
      t = static_cast<uint16_t>(rng());
      filter.Add(t);
    }
    for (uint16_t t : tags) ASSERT_TRUE(filter.MayContain(t)) << n;
    if (n != 30) continue;
    for (uint32_t t = 0; t <= 0xffff; ++t) {
      if (std::find(tags.begin(), tags.end(), t) != tags.end()) continue;
      ++absent;
      passed += filter.MayContain(static_cast<uint16_t>(t));
    }
  }
  // 30 tags set at most 60 of the 256 bits: under (60/256)^2 of the absent
  // tags pass.
  EXPECT_LT(passed, absent * 60 * 60 / (256 * 256));
}

// TagFilterOf follows the directory through appends and removals, and reads
// no slot past the block's room when the count says more.
TEST(TagFilterTest, TagFilterOfSummarizesTheDirectory) {
  io::AlignedBuffer bytes(512);
  EncodedBlock block(bytes.span());
  block.Init(1);
  EXPECT_FALSE(TagFilterOf(bytes.span()).MayContain(0x0101));
  std::vector<std::pair<std::string, uint16_t>> records;
  for (int i = 0; i < 20; ++i) {
    records.emplace_back(absl::StrCat("key", i), 0x0101 * (i + 1));
    ASSERT_TRUE(block.Append(records.back().first, "v", records.back().second));
  }
  TagFilter filter = TagFilterOf(bytes.span());
  for (const auto& [key, tag] : records) EXPECT_TRUE(filter.MayContain(tag));
  // Tag 0x0101 * (i + 1) sets bit i + 1 twice: bit 0 stays clear.
  EXPECT_FALSE(filter.MayContain(0x0000));
  block.Remove(*block.Find(records[0].first, records[0].second));
  EXPECT_FALSE(TagFilterOf(bytes.span()).MayContain(records[0].second));
  // A count past the directory's room (a corrupt block) reads only the room.
  std::memset(bytes.data() + 4, 0xff, 4);
  filter = TagFilterOf(bytes.span());
  EXPECT_TRUE(filter.MayContain(records[1].second));
}

// A slot that points at the wrong place is DataLoss even when the checksum
// is right (a block written by a faulty encoder).
TEST(EncodedBlockTest, BadDirectoryIsDataLoss) {
  io::AlignedBuffer bytes(512);
  EncodedBlock block(bytes.span());
  block.Init(5);
  ASSERT_TRUE(block.Append("alpha", "1", 9));
  ASSERT_TRUE(block.Append("beta", "22", 9));
  char* p = reinterpret_cast<char*>(bytes.data());
  for (const int delta : {-1, 1}) {
    // Slot 1's offset, moved by one byte.
    const uint32_t entry = GetFixed32(p + kBlockHeaderBytes + kSlotBytes);
    PutFixed32(p + kBlockHeaderBytes + kSlotBytes, entry + (delta << 16));
    block.Seal();
    EXPECT_EQ(VerifyBlock(bytes.span(), 5).code(), absl::StatusCode::kDataLoss);
    PutFixed32(p + kBlockHeaderBytes + kSlotBytes, entry);
  }
  block.Seal();
  EXPECT_TRUE(VerifyBlock(bytes.span(), 5).ok());
}

// A record keeps its key and value through copies, moves and value
// changes of every size, including a value that is a view of its own.
TEST(RecordTest, CopiesMovesAndValueChanges) {
  Record r("key", "value");
  EXPECT_EQ(r.key(), "key");
  EXPECT_EQ(r.value(), "value");
  Record copy = r;
  EXPECT_EQ(copy, r);
  r.set_value("other");  // same length: in place
  EXPECT_EQ(r.value(), "other");
  EXPECT_EQ(copy.value(), "value");
  r.set_value("a much longer value than before");
  EXPECT_EQ(r.key(), "key");
  EXPECT_EQ(r.value(), "a much longer value than before");
  r.set_value(r.value().substr(2, 4));  // a view of its own value
  EXPECT_EQ(r.value(), "much");
  r.set_value(r.value());
  EXPECT_EQ(r.value(), "much");
  r.set_value("");
  EXPECT_EQ(r.key(), "key");
  EXPECT_EQ(r.value(), "");
  Record moved = std::move(r);
  EXPECT_EQ(moved.key(), "key");
  EXPECT_EQ(r.key(), "");  // NOLINT(bugprone-use-after-move): empty
  EXPECT_EQ(r.value(), "");
  copy = moved;
  EXPECT_EQ(copy, moved);
  copy = Record("", "");
  EXPECT_EQ(copy.key(), "");
  EXPECT_NE(copy, moved);
}

TEST(SuperblockTest, RoundTripsAndRefusesCorruption) {
  Superblock sb;
  sb.block_size = 4096;
  sb.s0 = 32;
  sb.epsilon = 0.1;
  sb.hash_seed = 99;
  sb.num_buckets = 12345;
  sb.record_count = 777;
  sb.data_bytes = 88888;
  sb.stash_epoch = 3;
  sb.stash_blocks = 2;
  sb.sequence = 41;
  sb.wal_seq = 1234;
  sb.buffer_epoch = 5;
  sb.buffer_blocks = 6;
  sb.min_buckets = 10000;
  io::AlignedBuffer bytes(4096);
  EncodeSuperblock(sb, bytes.span());
  auto back = DecodeSuperblock(bytes.span());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->num_buckets, 12345u);
  EXPECT_EQ(back->epsilon, 0.1);
  EXPECT_EQ(back->sequence, 41u);
  EXPECT_EQ(back->slot(), 1u);
  EXPECT_EQ(back->wal_seq, 1234u);
  EXPECT_EQ(back->buffer_epoch, 5u);
  EXPECT_EQ(back->buffer_blocks, 6u);
  EXPECT_EQ(back->min_buckets, 10000u);
  for (size_t i = 0; i < 152; ++i) {
    bytes.data()[i] ^= std::byte{1};
    EXPECT_EQ(DecodeSuperblock(bytes.span()).status().code(),
              absl::StatusCode::kDataLoss)
        << "byte " << i;
    bytes.data()[i] ^= std::byte{1};
  }
  // More buckets reserved than the table has: no table writes that.
  sb.min_buckets = sb.num_buckets + 1;
  EncodeSuperblock(sb, bytes.span());
  EXPECT_EQ(DecodeSuperblock(bytes.span()).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace roundtable::internal
