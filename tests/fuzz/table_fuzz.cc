// libFuzzer target: opens and reads tables built from mutated files.
//
// Once per process, a seed table is made the way a crash leaves one (a
// stash, buffered puts, a journal, synced writes in the log, every tenth
// value out of line, 512-byte blocks). Each input is a script of edits to
// copies of its nine files, 8 bytes an edit:
//
//   byte 0     bits 0-2, and 7 as the fourth bit: the file (blocks, stash,
//              wal, wal.1, journal, buffer, values, spacemap, blockmap;
//              modulo nine);
//              bits 3-4: the edit (0: xor a byte, 1: set a byte, 2: zero
//              the 512-byte sector, 3: cut the file there);
//              bit 5 of the first edit: open writable (recovery then
//              checkpoints) rather than read-only;
//              bit 6 of the first edit: seal the edited files, every
//              checksum made valid again (superblocks, bucket, copy,
//              space-map and block-map blocks, log records, the journal; not
//              the values, whose checksums are in their references), so that
//              the fields
//              themselves are what the table must refuse
//   bytes 1-4  offset (little-endian, modulo the file's size)
//   byte 5     the byte for xor and set
//
// The edited files are opened as a table; every key is read, the table
// walked and checked. Open, Get, the walk and Check may fail, but with a
// status: a crash, a sanitizer report, or a value that was never written
// is a finding (for sealed files, whose edited bytes are as valid as any
// data, only a crash or a sanitizer report is). docs/testing.md says how to
// build and run it.
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "engine/internal/table_files.h"
#include "engine/internal/wal.h"
#include "roundtable/table.h"

namespace roundtable {
namespace {

constexpr int kKeys = 200;
// The table's files, in the order Seal numbers them.
constexpr std::array<const char*, 9> kFiles = {
    internal::kBlocksFile,  internal::kStashFile,    internal::kWalFiles[0],
    internal::kWalFiles[1], internal::kJournalFile,  internal::kBufferFile,
    internal::kValuesFile,  internal::kSpaceMapFile, internal::kBlockMapFile};

Options FuzzOptions() {
  Options o;
  o.block_size = 512;
  o.s0 = 2;
  o.block_cache_bytes = 4096;
  o.checkpoint_bytes = 1 << 20;
  o.write_buffer_bytes = 2048;  // a dozen puts wait, the rest are drained
  return o;
}

std::string Key(int i) { return absl::StrCat("key", i); }
// Every tenth value is out of line (past the 120-byte limit of 512-byte
// blocks).
std::string Value(int i, int round) {
  const size_t size = i % 10 == 0 ? 500 + (i * 7 + round) % 70 * 10
                                  : 30 + (i * 7 + round) % 70;
  return std::string(size, static_cast<char>('a' + (i + round) % 26));
}

// The seed table's files, and a directory for the inputs' tables.
struct Seed {
  std::array<std::string, kFiles.size()> files;
  std::string dir;
};

[[noreturn]] void Die(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "table_fuzz: %s: %s\n", what, s.ToString().c_str());
  std::abort();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Seed MakeSeed() {
  Seed seed;
  const std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  seed.dir = absl::StrCat(base, "/rt_fuzz_", getpid());
  const std::string origin = seed.dir + "_seed";
  DestroyTable(origin).IgnoreError();
  {
    auto table = Table::Open(FuzzOptions(), origin);
    if (!table.ok()) Die("create the seed table", table.status());
    WriteOptions sync;
    sync.sync = true;
    for (int i = 0; i < kKeys; ++i) {
      if (auto s = (*table)->Put(Key(i), Value(i, 0)); !s.ok()) Die("put", s);
    }
    if (auto s = (*table)->Checkpoint(); !s.ok()) Die("checkpoint", s);
    for (int i = 0; i < kKeys; i += 5) {
      if (auto s = (*table)->Delete(Key(i), sync); !s.ok()) Die("delete", s);
    }
    for (int i = 1; i < kKeys; i += 7) {
      if (auto s = (*table)->Put(Key(i), Value(i, 1), sync); !s.ok()) {
        Die("put", s);
      }
    }
    // The files as a crash would leave them: copied before the close.
    for (size_t f = 0; f < kFiles.size(); ++f) {
      seed.files[f] = ReadFile(absl::StrCat(origin, "/", kFiles[f]));
    }
  }
  DestroyTable(origin).IgnoreError();
  return seed;
}

const Seed& TheSeed() {
  static const Seed* seed = new Seed(MakeSeed());
  return *seed;
}

// Writes `bytes` to `path` as a sparse file: runs of 4 KiB of zeros are
// left as holes (the value file grows in 16 MiB steps of them, which
// writing whole would cost each input far more than the table's work).
void WriteFile(const std::string& path, const std::string& bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::abort();
  constexpr size_t kRun = 4096;
  for (size_t at = 0; at < bytes.size(); at += kRun) {
    const size_t n = std::min(kRun, bytes.size() - at);
    const char* p = bytes.data() + at;
    static const std::string kZeros(kRun, '\0');
    if (std::memcmp(p, kZeros.data(), n) == 0) continue;
    if (pwrite(fd, p, n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
      std::abort();
    }
  }
  if (ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) std::abort();
  close(fd);
}

// Any value read must be one the workload wrote for that key.
void CheckValue(std::string_view key, std::string_view value) {
  if (key.substr(0, 3) != "key") std::abort();
  const int i = std::atoi(std::string(key.substr(3)).c_str());
  if (value != Value(i, 0) && value != Value(i, 1)) {
    std::fprintf(stderr, "table_fuzz: %s has a value never written\n",
                 std::string(key).c_str());
    std::abort();
  }
}

constexpr size_t kBlock = 512;

// XXH3-64 of [0, n) stored at n (a superblock, a journal's descriptor).
void SealAt(char* p, size_t n) {
  internal::PutFixed64(p + n, XXH3_64bits(p, n));
}

// Every checksum of the edited files made valid again: what a crafted file
// from elsewhere looks like.
void Seal(std::array<std::string, kFiles.size()>& files) {
  // blocks: two superblocks, then bucket blocks; stash and buffer: copy
  // blocks; the space map's and the block map's blocks. All in 512-byte
  // blocks.
  for (const size_t f : {0, 1, 5, 7, 8}) {
    std::string& file = files[f];
    for (size_t at = 0; at + kBlock <= file.size(); at += kBlock) {
      char* p = file.data() + at;
      if (f == 0 && at < 2 * kBlock) {
        // At the end of the version the copy says it is (docs/format.md).
        const uint32_t version = internal::GetFixed32(p + 4);
        SealAt(p, version == 7 ? 112 : version == 8 ? 136 : 144);
      } else {
        internal::PutFixed64(p + 24, internal::BlockChecksum(p, kBlock));
      }
    }
  }
  // The log: each record whose length stays within the file.
  for (const size_t f : {2, 3}) {
    std::string& file = files[f];
    size_t at = 0;
    while (at + internal::kWalHeaderBytes <= file.size()) {
      char* h = file.data() + at;
      const uint64_t length = internal::GetFixed32(h);
      if (length > file.size() - at - internal::kWalHeaderBytes) break;
      internal::PutFixed64(
          h + 20, XXH3_64bits_withSeed(h + internal::kWalHeaderBytes, length,
                                       XXH3_64bits(h, 20)));
      at += internal::kWalHeaderBytes + length;
    }
  }
  // The journal: each image's checksum, then the descriptor's.
  std::string& journal = files[4];
  if (journal.size() >= 16) {
    const uint64_t n = internal::GetFixed32(journal.data() + 4);
    const uint64_t size = 16 + 20 * n + 8;
    const uint64_t first = (size + kBlock - 1) / kBlock * kBlock;
    if (size <= journal.size()) {
      for (uint64_t i = 0; i < n; ++i) {
        char* e = journal.data() + 16 + 20 * i;
        if (first + (i + 1) * kBlock > journal.size()) break;
        internal::PutFixed64(
            e + 12, XXH3_64bits(journal.data() + first + i * kBlock, kBlock));
      }
      SealAt(journal.data(), size - 8);
    }
  }
}

}  // namespace
}  // namespace roundtable

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roundtable::TheSeed();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace roundtable;
  const Seed& seed = TheSeed();
  // The files an input edits, copied from the seed's on first use: the
  // others (the 16 MiB value file, mostly) are written from the seed's.
  std::array<std::string, kFiles.size()> files;
  std::array<bool, kFiles.size()> copied{};
  auto edited = [&](size_t f) -> std::string& {
    if (!copied[f]) files[f] = seed.files[f];
    copied[f] = true;
    return files[f];
  };
  bool writable = false;
  bool seal = false;
  for (size_t at = 0; at + 8 <= size; at += 8) {
    const uint8_t* edit = data + at;
    std::string& file =
        edited(((edit[0] & 7) | ((edit[0] >> 4) & 8)) % kFiles.size());
    if (at == 0) {
      writable = edit[0] & 32;
      seal = edit[0] & 64;
    }
    if (file.empty()) continue;
    uint32_t offset;
    std::memcpy(&offset, edit + 1, 4);
    offset %= file.size();
    switch ((edit[0] >> 3) & 3) {
      case 0: file[offset] ^= static_cast<char>(edit[5]); break;
      case 1: file[offset] = static_cast<char>(edit[5]); break;
      case 2: {
        const size_t sector = offset / 512 * 512;
        std::memset(file.data() + sector, 0,
                    std::min<size_t>(512, file.size() - sector));
        break;
      }
      case 3: file.resize(offset); break;
    }
  }
  if (seal) {
    // Every file Seal knows (all but the value file's).
    for (size_t f = 0; f < kFiles.size(); ++f) {
      if (kFiles[f] != std::string_view(internal::kValuesFile)) edited(f);
    }
    Seal(files);
  }
  std::filesystem::create_directories(seed.dir);
  for (size_t f = 0; f < kFiles.size(); ++f) {
    WriteFile(absl::StrCat(seed.dir, "/", kFiles[f]),
              copied[f] ? files[f] : seed.files[f]);
  }
  Options o = FuzzOptions();
  o.create_if_missing = false;
  o.read_only = !writable;
  auto table = Table::Open(o, seed.dir);
  if (!table.ok()) return 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = Key(i);
    auto v = (*table)->Get(key);
    if (v.ok() && !seal) CheckValue(key, *v);
  }
  for (auto it = (*table)->NewIterator(); it->Valid(); it->Next()) {
    if (!seal) CheckValue(it->key(), it->value());
  }
  (*table)->Check().IgnoreError();
  return 0;
}
