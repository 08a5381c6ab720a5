// Opens (or creates) a table, writes, reads, walks and closes it:
//   ./example DIR
#include <roundtable/table.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "example_table";
  roundtable::Options options;  // new: 4 KiB blocks; existing: as stored
  auto table = roundtable::Table::Open(options, dir);
  if (!table.ok()) {
    std::fprintf(stderr, "open: %s\n", table.status().ToString().c_str());
    return 1;
  }
  roundtable::WriteBatch batch;
  batch.Put("alice", "42");
  batch.Put("bob", std::string(100000, 'b'));  // a large value, out of line
  if (auto s = (*table)->Write(batch, {.sync = true}); !s.ok()) {
    std::fprintf(stderr, "write: %s\n", s.ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::string> alice = (*table)->Get("alice");
  absl::StatusOr<std::string> carol = (*table)->Get("carol");
  std::printf("alice = %s, carol: %s\n", alice->c_str(),
              absl::IsNotFound(carol.status()) ? "not found" : "?");
  size_t records = 0;
  for (auto it = (*table)->NewIterator(); it->Valid(); it->Next()) ++records;
  std::printf("%zu records, roundtable %s\n", records,
              ROUNDTABLE_VERSION_STRING);
  return (*table)->Close().ok() ? 0 : 1;
}
