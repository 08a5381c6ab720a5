#include "engine/internal/journal.h"

#include <xxhash.h>

#include <cstring>
#include <string>

#include "engine/internal/coding.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {
namespace {

constexpr size_t kHeaderBytes = 16;
constexpr size_t kEntryBytes = 20;

uint64_t Checksum(const void* data, size_t size) {
  return XXH3_64bits(data, size);
}

}  // namespace

absl::Status WriteJournal(io::BlockDevice& device, uint64_t sequence,
                          std::span<const JournalEntry> entries) {
  const uint32_t bs = device.block_size();
  std::string d(kHeaderBytes + kEntryBytes * entries.size() + 8, '\0');
  PutFixed32(d.data(), kJournalMagic);
  PutFixed32(d.data() + 4, static_cast<uint32_t>(entries.size()));
  PutFixed64(d.data() + 8, sequence);
  for (size_t i = 0; i < entries.size(); ++i) {
    char* e = d.data() + kHeaderBytes + kEntryBytes * i;
    PutFixed32(e, entries[i].file);
    PutFixed64(e + 4, entries[i].block);
    PutFixed64(e + 12, Checksum(entries[i].bytes.data(), bs));
  }
  PutFixed64(d.data() + d.size() - 8, Checksum(d.data(), d.size() - 8));
  const uint64_t descriptor_blocks = (d.size() + bs - 1) / bs;
  io::AlignedBuffer descriptor(descriptor_blocks * bs);
  std::memcpy(descriptor.data(), d.data(), d.size());
  RT_RETURN_IF_ERROR(device.Resize(descriptor_blocks + entries.size()));
  std::vector<io::WriteRequest> writes;
  writes.push_back({0, descriptor.span()});
  for (size_t i = 0; i < entries.size(); ++i) {
    writes.push_back({descriptor_blocks + i, entries[i].bytes});
  }
  RT_RETURN_IF_ERROR(device.WriteBatch(writes));
  return device.Sync();
}

absl::StatusOr<std::optional<Journal>> ReadJournal(io::BlockDevice& device) {
  const uint32_t bs = device.block_size();
  const uint64_t blocks = device.num_blocks();
  if (blocks == 0) return std::nullopt;
  io::AlignedBuffer first(bs);
  RT_RETURN_IF_ERROR(device.Read(0, first.span()));
  const char* p = reinterpret_cast<const char*>(first.data());
  if (GetFixed32(p) != kJournalMagic) return std::nullopt;
  const uint64_t n = GetFixed32(p + 4);
  const uint64_t size = kHeaderBytes + kEntryBytes * n + 8;
  const uint64_t descriptor_blocks = (size + bs - 1) / bs;
  if (descriptor_blocks + n > blocks) return std::nullopt;
  io::AlignedBuffer descriptor(descriptor_blocks * bs);
  RT_RETURN_IF_ERROR(device.Read(0, descriptor.span()));
  const char* d = reinterpret_cast<const char*>(descriptor.data());
  if (GetFixed64(d + size - 8) != Checksum(d, size - 8)) return std::nullopt;
  Journal journal;
  journal.sequence = GetFixed64(d + 8);
  for (uint64_t i = 0; i < n; ++i) {
    const char* e = d + kHeaderBytes + kEntryBytes * i;
    JournalImage image{GetFixed32(e), GetFixed64(e + 4), io::AlignedBuffer(bs)};
    RT_RETURN_IF_ERROR(device.Read(descriptor_blocks + i, image.bytes.span()));
    if (Checksum(image.bytes.data(), bs) != GetFixed64(e + 12)) {
      return std::nullopt;
    }
    journal.images.push_back(std::move(image));
  }
  return journal;
}

}  // namespace roundtable::internal
