// The dump file of `roundtable dump` and `restore`: a table's layout and
// every record, written and read front to back (a pipe will do), each part
// checksummed (docs/format.md, "Dump files"):
//
//   header   "RTDUMP\0\1", version u32 (1), block_size u32,
//            block_records u32, 0 u32, s0 u64, epsilon (IEEE 754) u64,
//            hash_seed u64, XXH3-64 of the 48 bytes before it  (56 bytes)
//   record   1 u8, varint key length, varint value length, key, value,
//            XXH3-64 of the record's bytes before it, seeded with the
//            record's number (from 0): a record moved, dropped or repeated
//            fails its checksum or the count
//   trailer  2 u8, records u64, key and value bytes u64, XXH3-64 of the
//            17 bytes before it seeded with the record count
//
// Integers little-endian. Nothing may follow the trailer.
//
// Thread-safety: a writer or reader belongs to one thread.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_DUMP_FILE_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_DUMP_FILE_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/options.h"

namespace roundtable::cli {

class DumpWriter {
 public:
  // Writes the header of a table of `layout` (every layout field set).
  DumpWriter(std::ostream* out, const Options& layout);
  void Add(std::string_view key, std::string_view value);
  // Writes the trailer; the stream's state says whether every byte went.
  absl::Status Finish();
  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::ostream* out_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
  std::string frame_;
};

class DumpReader {
 public:
  explicit DumpReader(std::istream* in) : in_(in) {}
  // The layout in the header (every layout field set). DataLoss for a file
  // that is not a dump or whose header fails its checksum.
  absl::StatusOr<Options> ReadHeader();
  // The next record: true with *key and *value, or false once the trailer
  // has been read and verified (count, bytes, checksum, nothing after it).
  // DataLoss naming the record for a checksum that fails or a file cut
  // short.
  absl::StatusOr<bool> Next(std::string* key, std::string* value);
  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }

 private:
  absl::Status Read(char* p, size_t n, const char* what);
  std::istream* in_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_DUMP_FILE_H_
