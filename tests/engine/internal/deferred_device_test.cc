// The deferred device against a model (a vector of blocks): random writes,
// reads and resizes leave the inner device untouched until the held blocks
// are applied, after which the inner device equals the model.
#include "engine/internal/deferred_device.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

constexpr uint32_t kBlock = 512;

std::string Contents(io::BlockDevice& device) {
  std::string all;
  io::AlignedBuffer buffer(kBlock);
  for (uint64_t b = 0; b < device.num_blocks(); ++b) {
    EXPECT_TRUE(device.Read(b, buffer.span()).ok());
    all.append(reinterpret_cast<const char*>(buffer.data()), kBlock);
  }
  return all;
}

// `buffer` (one block) filled with c.
std::span<const std::byte> Filled(io::AlignedBuffer& buffer, char c) {
  std::memset(buffer.data(), c, kBlock);
  return {buffer.data(), kBlock};
}

// Block b as `device` reads it.
std::string ReadBlock(io::BlockDevice& device, uint64_t b) {
  io::AlignedBuffer out(kBlock);
  EXPECT_TRUE(device.Read(b, out.span()).ok());
  return std::string(reinterpret_cast<const char*>(out.data()), kBlock);
}

// A lender of `n` slots of its own, which records the blocks whose slots
// come back to it, and whether current.
struct TestLender final : DeferredDevice::Lender {
  explicit TestLender(int n) {
    for (int i = 0; i < n; ++i) slots.emplace_back(kBlock);
  }
  std::vector<io::AlignedBuffer> slots;
  size_t lent = 0;
  std::vector<std::pair<uint64_t, bool>> back;  // block, current
  std::byte* Lend() override {
    return lent < slots.size() ? slots[lent++].data() : nullptr;
  }
  bool Owns(const std::byte* slot) const override {
    for (const io::AlignedBuffer& s : slots) {
      if (s.data() == slot) return true;
    }
    return false;
  }
  void TakeBack(std::span<const Leaving> leaving) override {
    for (const Leaving& l : leaving) {
      if (Owns(l.slot)) back.emplace_back(l.block, l.current);
    }
  }
};

TEST(DeferredDeviceTest, HoldsWritesUntilApplied) {
  std::mt19937_64 rng(3);
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(8).ok());
  std::string model(8 * kBlock, '\0');
  DeferredDevice device(inner.get());
  io::AlignedBuffer buffer(2 * kBlock);
  for (int round = 0; round < 20; ++round) {
    const std::string inner_before = Contents(*inner);
    for (int step = 0; step < 200; ++step) {
      const uint64_t size = model.size() / kBlock;
      const int op = static_cast<int>(rng() % 10);
      if (op < 5 && size >= 2) {
        const uint64_t b = rng() % (size - 1);
        const size_t n = 1 + rng() % 2;
        for (size_t i = 0; i < n * kBlock; ++i) {
          buffer.data()[i] = static_cast<std::byte>(rng());
        }
        ASSERT_TRUE(device.Write(b, std::span(buffer.data(), n * kBlock)).ok());
        std::memcpy(model.data() + b * kBlock, buffer.data(), n * kBlock);
      } else if (op < 8 && size >= 2) {
        const uint64_t b = rng() % (size - 1);
        if (rng() % 2) {
          ASSERT_TRUE(device.Read(b, buffer.span()).ok());
        } else {
          // The same two blocks as a batch of two one-block reads.
          const io::ReadRequest reads[] = {
              {b, std::span(buffer.data(), kBlock)},
              {b + 1, std::span(buffer.data() + kBlock, kBlock)}};
          ASSERT_TRUE(device.ReadBatch(reads).ok());
        }
        ASSERT_EQ(
            std::memcmp(buffer.data(), model.data() + b * kBlock, 2 * kBlock),
            0)
            << "round " << round << " step " << step;
      } else {
        const uint64_t to = 1 + rng() % 16;
        ASSERT_TRUE(device.Resize(to).ok());
        model.resize(to * kBlock, '\0');
      }
      ASSERT_EQ(device.num_blocks(), model.size() / kBlock);
    }
    ASSERT_EQ(Contents(*inner), inner_before) << "the inner device changed";
    ASSERT_EQ(Contents(device), model);
    // Apply as a checkpoint does: size first, then the held blocks.
    ASSERT_TRUE(inner->Resize(device.num_blocks()).ok());
    for (const auto& [b, bytes] : device.held()) {
      ASSERT_TRUE(inner->Write(b, bytes.span()).ok());
    }
    // Blocks cut off and grown again read as zeros through the device; the
    // inner device must hold the same.
    for (uint64_t b = 0; b < device.num_blocks(); ++b) {
      if (device.Held(b) != nullptr) continue;
      ASSERT_TRUE(device.Read(b, std::span(buffer.data(), kBlock)).ok());
      ASSERT_TRUE(inner->Write(b, std::span(buffer.data(), kBlock)).ok());
    }
    device.Freeze();
    device.ReleaseFrozen();
    EXPECT_TRUE(device.held().empty());
    ASSERT_EQ(Contents(*inner), model);
    ASSERT_EQ(Contents(device), model);
  }
}

// Frozen blocks answer reads with the bytes they had when frozen, whatever
// the inner device holds, until ReleaseFrozen; they are no longer held, a
// write holds a block anew without touching its frozen bytes, and a Resize
// below a frozen block cuts it off.
// A layer counts its transfers but leaves their time to the device below.
TEST(DeferredDeviceTest, CountsTransfersAndLeavesTheirTimeToTheInnerDevice) {
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(8).ok());
  DeferredDevice device(inner.get());
  io::AlignedBuffer buffer(kBlock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(device.Read(i % 8, buffer.span()).ok());
  }
  EXPECT_EQ(device.stats().blocks_read, 100u);
  EXPECT_EQ(device.stats().wait_ns, 0u);
  EXPECT_EQ(inner->stats().blocks_read, 100u);
  EXPECT_GT(inner->stats().wait_ns, 0u);
}

TEST(DeferredDeviceTest, FrozenBlocksAnswerReadsUntilReleased) {
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(6).ok());
  DeferredDevice device(inner.get());
  io::AlignedBuffer buffer(kBlock);
  auto fill = [&](char c) {
    std::memset(buffer.data(), c, kBlock);
    return std::span<const std::byte>(buffer.data(), kBlock);
  };
  auto read = [&](io::BlockDevice& d, uint64_t b) {
    io::AlignedBuffer out(kBlock);
    EXPECT_TRUE(d.Read(b, out.span()).ok());
    return std::string(reinterpret_cast<const char*>(out.data()), kBlock);
  };
  auto blocks = [](char c) { return std::string(kBlock, c); };
  ASSERT_TRUE(inner->Write(1, fill('o')).ok());
  ASSERT_TRUE(inner->Write(2, fill('o')).ok());
  ASSERT_TRUE(inner->Write(5, fill('o')).ok());
  ASSERT_TRUE(device.Write(1, fill('a')).ok());
  ASSERT_TRUE(device.Write(2, fill('b')).ok());
  ASSERT_TRUE(device.Write(5, fill('c')).ok());
  device.Freeze();
  EXPECT_TRUE(device.held().empty());
  EXPECT_EQ(device.frozen().size(), 3u);
  EXPECT_EQ(device.Held(1), nullptr);
  // The inner device still holds the old bytes: reads see the frozen ones,
  // one at a time and in a batch.
  EXPECT_EQ(read(device, 1), blocks('a'));
  io::AlignedBuffer pair(2 * kBlock);
  const io::ReadRequest request{1, pair.span()};
  ASSERT_TRUE(device.ReadBatch({&request, 1}).ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(pair.data()), 2 * kBlock),
            blocks('a') + blocks('b'));
  // A write after the freeze is held; the frozen bytes stay.
  ASSERT_TRUE(device.Write(2, fill('B')).ok());
  EXPECT_NE(device.Held(2), nullptr);
  EXPECT_EQ(read(device, 2), blocks('B'));
  EXPECT_EQ(
      std::string(reinterpret_cast<const char*>(device.frozen().at(2).data),
                  kBlock),
      blocks('b'));
  // Cut off and grown again: zeros, though still frozen for whoever writes
  // it in place.
  ASSERT_TRUE(device.Resize(4).ok());
  ASSERT_TRUE(device.Resize(6).ok());
  EXPECT_EQ(read(device, 5), blocks('\0'));
  EXPECT_EQ(device.frozen().size(), 3u);
  // The frozen bytes written in place, then released: reads go inside.
  for (const auto& [b, bytes] : device.frozen()) {
    ASSERT_TRUE(inner->Write(b, bytes.span()).ok());
  }
  ASSERT_TRUE(inner->Write(1, fill('i')).ok());  // only the inner has it now
  device.ReleaseFrozen();
  EXPECT_TRUE(device.frozen().empty());
  EXPECT_EQ(read(device, 1), blocks('i'));
  EXPECT_EQ(read(device, 2), blocks('B'));
  EXPECT_EQ(read(device, 5), blocks('\0'));
}

// Blocks detached on their way to the inner device (written ahead of a
// checkpoint) answer reads where they lie, a write holds one anew, and
// once written the inner device answers for them, blocks past the size
// the device last froze at among them; a failed write holds them again,
// and a block cut off meanwhile reads as zeros.
TEST(DeferredDeviceTest, DetachedBlocksAnswerReadsUntilWrittenThenReadInside) {
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(8).ok());
  DeferredDevice device(inner.get());
  io::AlignedBuffer buffer(kBlock);
  auto fill = [&](char c) { return Filled(buffer, c); };
  auto read = [&](uint64_t b) { return ReadBlock(device, b); };
  auto blocks = [](char c) { return std::string(kBlock, c); };
  for (uint64_t b = 1; b <= 3; ++b) ASSERT_TRUE(inner->Write(b, fill('o')).ok());
  // Blocks 8 and 9 are new: the inner device's bytes there are not theirs.
  ASSERT_TRUE(inner->Resize(10).ok());
  ASSERT_TRUE(inner->Write(8, fill('s')).ok());
  ASSERT_TRUE(device.Resize(10).ok());
  EXPECT_EQ(read(8), blocks('\0'));
  ASSERT_TRUE(device.Write(1, fill('a')).ok());
  ASSERT_TRUE(device.Write(2, fill('b')).ok());
  ASSERT_TRUE(device.Write(9, fill('n')).ok());
  for (const uint64_t b : {1, 2, 9}) device.Detach(b);
  EXPECT_TRUE(device.held().empty());
  EXPECT_NE(device.FrozenCurrent(1), nullptr);
  EXPECT_EQ(read(1), blocks('a'));
  EXPECT_EQ(read(9), blocks('n'));
  io::AlignedBuffer pair(2 * kBlock);
  const io::ReadRequest request{1, pair.span()};
  ASSERT_TRUE(device.ReadBatch({&request, 1}).ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(pair.data()), 2 * kBlock),
            blocks('a') + blocks('b'));
  ASSERT_TRUE(device.Write(2, fill('B')).ok());  // held anew
  EXPECT_EQ(read(2), blocks('B'));
  EXPECT_EQ(device.FrozenCurrent(2), nullptr);
  // The owner's thread writes them; from then on the inner device answers
  // (shown by changing its bytes), but for the block held anew.
  ASSERT_TRUE(inner->Write(1, fill('a')).ok());
  ASSERT_TRUE(inner->Write(2, fill('b')).ok());
  ASSERT_TRUE(inner->Write(9, fill('n')).ok());
  device.FinishLeaving(/*written=*/true);
  ASSERT_TRUE(inner->Write(1, fill('i')).ok());
  ASSERT_TRUE(inner->Write(9, fill('j')).ok());
  EXPECT_EQ(read(1), blocks('i'));
  EXPECT_EQ(read(2), blocks('B'));
  EXPECT_EQ(read(9), blocks('j'));
  EXPECT_EQ(read(8), blocks('\0'));  // new, never written through
  // A failed write: held again, as it was.
  ASSERT_TRUE(device.Write(3, fill('c')).ok());
  device.Detach(3);
  device.FinishLeaving(/*written=*/false);
  EXPECT_NE(device.Held(3), nullptr);
  EXPECT_EQ(read(3), blocks('c'));
  // Cut off while on its way, grown again: zeros.
  ASSERT_TRUE(device.Write(7, fill('z')).ok());
  device.Detach(7);
  ASSERT_TRUE(device.Resize(6).ok());
  ASSERT_TRUE(inner->Write(7, fill('z')).ok());
  device.FinishLeaving(/*written=*/true);
  ASSERT_TRUE(device.Resize(8).ok());
  EXPECT_EQ(read(7), blocks('\0'));
}

// A frozen block held anew may leave too: its frozen image stays as it
// was (the checkpoint's thread reads it), the newer bytes answer reads on
// their way and the inner device once written, never the frozen image
// again; when the frozen blocks are freed, its frozen slot goes back as
// stale while the written one is the block's.
TEST(DeferredDeviceTest, FrozenBlocksHeldAnewLeaveWithoutTheirFrozenImage) {
  TestLender lender(8);
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(8).ok());
  DeferredDevice device(inner.get());
  device.set_lender(&lender);
  io::AlignedBuffer buffer(kBlock);
  auto fill = [&](char c) { return Filled(buffer, c); };
  auto read = [&](uint64_t b) { return ReadBlock(device, b)[0]; };
  ASSERT_TRUE(device.Write(1, fill('f')).ok());
  ASSERT_TRUE(device.Write(2, fill('g')).ok());
  device.Freeze();
  const std::byte* frozen1 = device.frozen().at(1).data;
  EXPECT_EQ(device.unwritten_bytes(), 2 * kBlock);
  ASSERT_TRUE(device.Write(1, fill('n')).ok());  // held anew
  ASSERT_TRUE(device.Write(2, fill('m')).ok());
  EXPECT_EQ(device.unwritten_bytes(), 4 * kBlock);
  device.Detach(1);
  device.Detach(2);
  EXPECT_EQ(device.unwritten_bytes(), 4 * kBlock);
  EXPECT_EQ(read(1), 'n');
  EXPECT_EQ(static_cast<char>(device.FrozenCurrent(1)[0]), 'n');
  EXPECT_EQ(static_cast<char>(frozen1[0]), 'f');  // as the thread wrote it
  // Block 1 is written; block 2 is held anew once more before its write
  // is done.
  ASSERT_TRUE(inner->Write(1, fill('n')).ok());
  ASSERT_TRUE(inner->Write(2, fill('m')).ok());
  ASSERT_TRUE(device.Write(2, fill('p')).ok());
  device.FinishLeaving(/*written=*/true);
  ASSERT_TRUE(inner->Write(1, fill('i')).ok());  // shows who answers
  EXPECT_EQ(read(1), 'i');
  EXPECT_EQ(device.FrozenCurrent(1), nullptr);
  EXPECT_EQ(read(2), 'p');
  io::AlignedBuffer pair(2 * kBlock);
  const io::ReadRequest request{1, pair.span()};
  ASSERT_TRUE(device.ReadBatch({&request, 1}).ok());
  EXPECT_EQ(static_cast<char>(pair.data()[0]), 'i');
  EXPECT_EQ(static_cast<char>(pair.data()[kBlock]), 'p');
  // Back from leaving: block 1's written slot as its bytes, block 2's
  // detached slot as stale (held anew meanwhile).
  std::vector<std::pair<uint64_t, bool>> want = {{1, true}, {2, false}};
  std::sort(lender.back.begin(), lender.back.end());
  EXPECT_EQ(lender.back, want);
  lender.back.clear();
  EXPECT_TRUE(device.ReleaseFrozen(1) == false);
  EXPECT_TRUE(device.ReleaseFrozen(1));
  std::sort(lender.back.begin(), lender.back.end());
  want = {{1, false}, {2, false}};  // both frozen images are stale
  EXPECT_EQ(lender.back, want);
  EXPECT_EQ(read(1), 'i');
  EXPECT_EQ(read(2), 'p');
  // Frozen again, block 1 is as any other: its frozen image answers.
  ASSERT_TRUE(device.Write(1, fill('q')).ok());
  device.Freeze();
  EXPECT_EQ(read(1), 'q');
  EXPECT_EQ(static_cast<char>(device.FrozenCurrent(1)[0]), 'q');
}

// A lender's slots hold blocks, and come back to it as the blocks leave
// the device: current when released unchanged or frozen and in place, not
// when cut off or held anew since; the device's own slots stay with it.
TEST(DeferredDeviceTest, LentSlotsGoBackToTheLender) {
  TestLender lender(4);
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(8).ok());
  DeferredDevice device(inner.get());
  device.set_lender(&lender);
  io::AlignedBuffer buffer(kBlock);
  std::memset(buffer.data(), 'x', kBlock);
  for (uint64_t b = 1; b <= 5; ++b) {  // the fifth uses the device's own
    ASSERT_TRUE(device.Write(b, buffer.span()).ok());
  }
  EXPECT_EQ(lender.lent, 4u);
  EXPECT_EQ(device.Held(1), lender.slots[0].data());
  device.Release(1);  // unchanged: current
  device.Freeze();
  ASSERT_TRUE(device.Write(2, buffer.span()).ok());  // held anew
  ASSERT_TRUE(device.Resize(4).ok());                // 4 and 5 cut off
  device.ReleaseFrozen();
  std::sort(lender.back.begin(), lender.back.end());
  const std::vector<std::pair<uint64_t, bool>> want = {
      {1, true}, {2, false}, {3, true}, {4, false}};
  EXPECT_EQ(lender.back, want);
}

// Frozen blocks freed a few at a time: each call frees at most that many,
// the rest still answer reads with their frozen bytes, a block held anew
// meanwhile reads as held, and once the last is freed the device freezes
// again.
TEST(DeferredDeviceTest, FrozenBlocksFreedAFewAtATime) {
  constexpr uint64_t kBlocks = 23;
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(kBlocks).ok());
  DeferredDevice device(inner.get());
  io::AlignedBuffer buffer(kBlock);
  auto read = [&](uint64_t b) {
    io::AlignedBuffer out(kBlock);
    EXPECT_TRUE(device.Read(b, out.span()).ok());
    return static_cast<char>(out.data()[0]);
  };
  for (uint64_t b = 0; b < kBlocks; ++b) {
    std::memset(buffer.data(), 'a' + static_cast<int>(b), kBlock);
    ASSERT_TRUE(device.Write(b, buffer.span()).ok());
  }
  device.Freeze();
  // The inner device gets every frozen block but for its first byte,
  // so that a read shows which of the two answered it.
  for (const auto& [b, bytes] : device.frozen()) {
    std::memcpy(buffer.data(), bytes.data, kBlock);
    buffer.data()[0] = std::byte{'I'};
    ASSERT_TRUE(inner->Write(b, buffer.span()).ok());
  }
  std::memset(buffer.data(), 'H', kBlock);
  ASSERT_TRUE(device.Write(7, buffer.span()).ok());  // held anew
  size_t left = kBlocks;
  int calls = 0;
  bool done = false;
  while (!done) {
    done = device.ReleaseFrozen(5);
    ++calls;
    ASSERT_EQ(device.frozen().size(), left - std::min<size_t>(left, 5));
    left = device.frozen().size();
    for (uint64_t b = 0; b < kBlocks; ++b) {
      const char want = b == 7 ? 'H'
                        : device.frozen().contains(b)
                            ? static_cast<char>('a' + b)
                            : 'I';
      ASSERT_EQ(read(b), want) << "block " << b << " after call " << calls;
    }
    ASSERT_EQ(done, left == 0);
  }
  EXPECT_EQ(calls, 5);  // 23 blocks, five at a time
  device.Freeze();
  EXPECT_EQ(device.frozen().size(), 1u);  // block 7
  EXPECT_TRUE(device.ReleaseFrozen(0) == false);
  EXPECT_TRUE(device.ReleaseFrozen(1));
  EXPECT_TRUE(device.frozen().empty());
}

// With a seal, frozen blocks stay as written until SealFrozen; a read
// meanwhile gets a sealed copy, a read racing SealFrozen (another thread)
// gets the same sealed bytes, and a read after it seals nothing.
TEST(DeferredDeviceTest, ReadsOfFrozenBlocksAreSealedBeforeTheBlocksAre) {
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(200).ok());
  DeferredDevice device(inner.get());
  // The seal writes the block's number into its first byte.
  std::atomic<int> seals{0};
  device.set_seal([&](uint64_t block, std::span<std::byte> bytes) {
    bytes[0] = static_cast<std::byte>(block);
    seals.fetch_add(1);
  });
  io::AlignedBuffer buffer(kBlock);
  std::memset(buffer.data(), 'x', kBlock);
  for (uint64_t b = 0; b < 200; ++b) {
    ASSERT_TRUE(device.Write(b, buffer.span()).ok());
  }
  device.Freeze();
  auto first_byte = [&](uint64_t b) {
    io::AlignedBuffer out(kBlock);
    EXPECT_TRUE(device.Read(b, out.span()).ok());
    EXPECT_EQ(static_cast<char>(out.data()[1]), 'x');
    return static_cast<uint64_t>(out.data()[0]);
  };
  EXPECT_EQ(first_byte(7), 7u);
  EXPECT_EQ(static_cast<char>(device.frozen().at(7).data[0]), 'x');
  std::thread sealer([&] { device.SealFrozen(); });
  for (int round = 0; round < 5; ++round) {
    for (uint64_t b = 0; b < 200; ++b) ASSERT_EQ(first_byte(b), b);
  }
  sealer.join();
  for (uint64_t b = 0; b < 200; ++b) {
    ASSERT_EQ(static_cast<uint64_t>(device.frozen().at(b).data[0]), b);
  }
  // Once every frozen block is sealed, a read copies it as it is.
  seals = 0;
  for (uint64_t b = 0; b < 200; ++b) ASSERT_EQ(first_byte(b), b);
  EXPECT_EQ(seals.load(), 0);
  device.ReleaseFrozen();
}

// With a leaving seal, detached blocks leave unsealed until SealLeaving
// (the writing thread's); a read meanwhile gets a sealed copy, a read
// racing it the same sealed bytes, and a read after it seals nothing;
// the next blocks to leave are unsealed again.
TEST(DeferredDeviceTest, ReadsOfLeavingBlocksAreSealedBeforeTheBlocksAre) {
  auto inner = io::NewMemoryDevice(kBlock);
  ASSERT_TRUE(inner->Resize(200).ok());
  DeferredDevice device(inner.get());
  // The seal writes the batch's mark into the block's first byte.
  std::atomic<int> seals{0};
  std::atomic<char> mark{'s'};
  device.set_leaving_seal([&](std::span<std::byte> bytes) {
    bytes[0] = static_cast<std::byte>(mark.load());
    seals.fetch_add(1);
  });
  io::AlignedBuffer buffer(kBlock);
  std::memset(buffer.data(), 'x', kBlock);
  auto leave = [&](uint64_t from, uint64_t to) {
    std::vector<std::span<std::byte>> slots;
    for (uint64_t b = from; b < to; ++b) {
      EXPECT_TRUE(device.Write(b, buffer.span()).ok());
      slots.push_back({device.Held(b), kBlock});
      device.Detach(b);
    }
    return slots;
  };
  auto first_byte = [&](uint64_t b) {
    io::AlignedBuffer out(kBlock);
    EXPECT_TRUE(device.Read(b, out.span()).ok());
    EXPECT_EQ(static_cast<char>(out.data()[1]), 'x');
    return static_cast<char>(out.data()[0]);
  };
  std::vector<std::span<std::byte>> slots = leave(0, 200);
  EXPECT_EQ(first_byte(7), 's');
  EXPECT_EQ(static_cast<char>(slots[7][0]), 'x');  // the block's own bytes
  EXPECT_EQ(static_cast<char>(device.FrozenCurrent(7)[1]), 'x');
  std::thread sealer([&] { device.SealLeaving(slots); });
  for (int round = 0; round < 5; ++round) {
    for (uint64_t b = 0; b < 200; ++b) ASSERT_EQ(first_byte(b), 's');
  }
  sealer.join();
  for (const std::span<std::byte> slot : slots) {
    ASSERT_EQ(static_cast<char>(slot[0]), 's');
  }
  seals = 0;
  for (uint64_t b = 0; b < 200; ++b) ASSERT_EQ(first_byte(b), 's');
  EXPECT_EQ(seals.load(), 0);
  // Written and back: the inner device answers. The next batch leaves
  // unsealed, and its reads seal their copies with its mark.
  for (uint64_t b = 0; b < 200; ++b) {
    ASSERT_TRUE(inner->Write(b, {slots[b].data(), kBlock}).ok());
  }
  device.FinishLeaving(/*written=*/true);
  mark = 't';
  slots = leave(10, 20);
  EXPECT_EQ(first_byte(12), 't');
  EXPECT_EQ(first_byte(30), 's');  // written before, read from the device
  EXPECT_EQ(static_cast<char>(slots[2][0]), 'x');
  device.SealLeaving(slots);
  EXPECT_EQ(static_cast<char>(slots[2][0]), 't');
  device.FinishLeaving(/*written=*/true);
}

}  // namespace
}  // namespace roundtable::internal
