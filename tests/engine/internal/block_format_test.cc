// Encoded blocks edited in place against a std::map, sealed blocks verified,
// and every single-byte corruption caught; superblocks round-trip and refuse
// corruption.
#include "engine/internal/block_format.h"

#include <map>
#include <random>

#include "engine/internal/superblock.h"
#include "gtest/gtest.h"
#include "io/block_device.h"

namespace roundtable::internal {
namespace {

TEST(EncodedBlockTest, EditsMatchAMapAndSealedBlocksVerify) {
  for (const uint32_t bs : {512u, 4096u}) {
    std::mt19937_64 rng(bs);
    io::AlignedBuffer bytes(bs);
    EncodedBlock block(bytes.span());
    block.Init(7);
    std::map<std::string, std::string> model;
    size_t used = 0;
    for (int step = 0; step < 3000; ++step) {
      const std::string key = "k" + std::to_string(rng() % 40);
      if (rng() % 3) {
        const std::string value(rng() % 30, 'a' + rng() % 26);
        if (auto f = block.Find(key)) {
          used -= f->size;
          block.Remove(*f);
          model.erase(key);
        }
        const bool fits = EncodedSize(key, value) <= block.room();
        ASSERT_EQ(block.Append(key, value), fits);
        if (fits) {
          model[key] = value;
          used += EncodedSize(key, value);
        }
      } else if (auto f = block.Find(key)) {
        used -= f->size;
        block.Remove(*f);
        model.erase(key);
      }
      ASSERT_EQ(block.count(), model.size());
      ASSERT_EQ(block.used(), used);
      ASSERT_EQ(block.room(), bs - kBlockHeaderBytes - used);
      if (step % 100 == 0) {
        std::map<std::string, std::string> seen;
        block.ForEach([&](std::string_view k, std::string_view v) {
          seen.emplace(k, v);
        });
        ASSERT_EQ(seen, model);
        for (const auto& [k, v] : model) ASSERT_EQ(block.Find(k)->value, v);
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
  ASSERT_TRUE(block.Append("key", "value"));
  ASSERT_TRUE(block.Append("other", std::string(40, 'x')));
  block.Seal();
  ASSERT_TRUE(VerifyBlock(bytes.span(), 3).ok());
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes.data()[i] ^= std::byte{0x10};
    EXPECT_EQ(VerifyBlock(bytes.span(), 3).code(), absl::StatusCode::kDataLoss)
        << "byte " << i;
    bytes.data()[i] ^= std::byte{0x10};
  }
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
  io::AlignedBuffer bytes(4096);
  EncodeSuperblock(sb, bytes.span());
  auto back = DecodeSuperblock(bytes.span());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->num_buckets, 12345u);
  EXPECT_EQ(back->epsilon, 0.1);
  EXPECT_EQ(back->sequence, 41u);
  EXPECT_EQ(back->slot(), 1u);
  for (size_t i = 0; i < 96; ++i) {
    bytes.data()[i] ^= std::byte{1};
    EXPECT_EQ(DecodeSuperblock(bytes.span()).status().code(),
              absl::StatusCode::kDataLoss)
        << "byte " << i;
    bytes.data()[i] ^= std::byte{1};
  }
}

}  // namespace
}  // namespace roundtable::internal
