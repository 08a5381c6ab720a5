// The files of a table's directory (docs/format.md): their names, the lock
// that keeps one writer per table, creating a table's directory safely,
// opening its files, formatting a new table's block file, publishing a new
// table, and destroying one. The one owner of the names:
// the CLI and the tests use them from here.
//
// Thread-safety: TableLock is a value that one thread owns; the functions
// are safe to call from any thread.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_TABLE_FILES_H_
#define ROUNDTABLE_ENGINE_INTERNAL_TABLE_FILES_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/options.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr char kBlocksFile[] = "blocks";
// A new table's block file until its first checkpoint is durable: a crash
// while a table is created leaves no `blocks` file, so no table.
inline constexpr char kNewBlocksFile[] = "blocks.new";
inline constexpr char kStashFile[] = "stash";
inline constexpr char kBufferFile[] = "buffer";
// The write-ahead log's two files: a checkpoint moves the writers to the
// other one, so that they go on logging while its journal is written.
inline constexpr std::array<const char*, 2> kWalFiles = {"wal", "wal.1"};
inline constexpr char kJournalFile[] = "journal";
// Out-of-line values, and the map of which of the value file's units are
// in use.
inline constexpr char kValuesFile[] = "values";
inline constexpr char kSpaceMapFile[] = "spacemap";
// Where each bucket's block lies in the block file.
inline constexpr char kBlockMapFile[] = "blockmap";
// Locked by every open handle (TableLock); holds the writer's process id.
inline constexpr char kLockFile[] = "LOCK";

// The nine files that hold a table's data.
inline constexpr std::array<const char*, 9> kDataFiles = {
    kBlocksFile,  kStashFile,  kBufferFile,   kWalFiles[0], kWalFiles[1],
    kJournalFile, kValuesFile, kSpaceMapFile, kBlockMapFile};

// The files a checkpoint's journal entry names, by id.
inline constexpr uint32_t kBlocksFileId = 0;
inline constexpr uint32_t kStashFileId = 1;
inline constexpr uint32_t kBufferFileId = 2;
inline constexpr uint32_t kSpaceMapFileId = 3;
inline constexpr uint32_t kBlockMapFileId = 4;
inline constexpr uint32_t kJournaledFiles = 5;

// dir/file.
std::string TablePath(std::string_view dir, std::string_view file);

// A table's nine files, open.
struct TableFiles {
  std::unique_ptr<io::BlockDevice> blocks, stash, journal, buffer, values,
      spacemap, blockmap;
  std::array<std::unique_ptr<io::BlockDevice>, 2> wal;

  // The file a journal entry names (Open refuses a journal naming another
  // id).
  io::BlockDevice& ById(uint32_t id) const {
    return id == kStashFileId      ? *stash
           : id == kBufferFileId   ? *buffer
           : id == kSpaceMapFileId ? *spacemap
           : id == kBlockMapFileId ? *blockmap
                                   : *blocks;
  }
};

// Opens one of a table's files as a block device: io::OpenBlockDevice, or
// in tests a fault-injection layer over it (Table::Impl::Open).
using FileOpener = std::function<absl::StatusOr<std::unique_ptr<io::BlockDevice>>(
    const std::string& path, const io::DeviceOptions& options)>;

// Opens the files of the table at `dir` as `options` say (backend, direct
// I/O, read-only), in blocks of `block_size` bytes, each with `open_file`
// (empty: io::OpenBlockDevice); `exists`: the table exists, else its
// block file is the unpublished kNewBlocksFile and every file is created.
// The log takes a small append per write, so with the default backend its
// files are memory-mapped. A missing log or journal file is created anew
// for a writer and is empty (in memory) for a reader; so are the value
// file and its space map, which a table of format version 7 lacks.
absl::StatusOr<TableFiles> OpenTableFiles(const std::string& dir,
                                          const Options& options,
                                          uint32_t block_size, bool exists,
                                          const FileOpener& open_file);

// Writes a new table's `buckets` empty bucket blocks, sealed, after the
// header blocks of its block file (not yet published, so nothing needs the
// journal), a run at a time: creating a table takes memory for one run
// whatever the bucket count and the block size.
absl::Status FormatNewBlocks(io::BlockDevice& file, uint64_t buckets);
// Writes empty bucket blocks, sealed, for buckets [first, end), growing the
// file to hold them (Table::Reserve, past the blocks a checkpoint wrote).
absl::Status FormatBuckets(io::BlockDevice& file, uint64_t first,
                           uint64_t end);

// The lock on a table's directory: an open file description lock (fcntl
// F_OFD_SETLK) on its LOCK file, exclusive for a writer and shared for a
// reader. Such a lock belongs to the open file, not the process, so it
// excludes a second handle in the same process as well as in another, and
// it goes away with the process however that ends (no stale lock after
// SIGKILL). Released when the TableLock is destroyed or Released.
class TableLock {
 public:
  TableLock() = default;
  TableLock(TableLock&& other) noexcept;
  TableLock& operator=(TableLock&& other) noexcept;
  ~TableLock() { Release(); }

  // Takes the lock of the table directory `dir`, which must exist, without
  // waiting. A writer (`exclusive`) creates the LOCK file if needed and
  // writes its process id into it. FailedPrecondition naming the table
  // when another handle holds a conflicting lock: "locked by a writer
  // (process N)" or "open read-only elsewhere". A reader that can neither
  // open nor create the LOCK file (a read-only mount, or a directory it
  // may not write to where no writer ever opened the table) goes on
  // without a lock: no writer can be there.
  static absl::StatusOr<TableLock> Acquire(const std::string& dir,
                                           bool exclusive);

  void Release();

 private:
  explicit TableLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Whether a directory with no `blocks` file may become a new table whose
// block file starts with `blocks` blocks of `block_size` bytes: OK when it
// holds none of the table's files, or the leftovers of a creation cut
// short (a `blocks.new`), which it then removes (unlinks: nothing they
// point to is changed). FailedPrecondition when it holds table files but
// neither (they are not this creation's, and creating would lose them);
// ResourceExhausted when its file system has no room for the blocks.
absl::Status PrepareNewTable(const std::string& dir, uint64_t blocks,
                             uint32_t block_size);

// Renames a new table's block file, formatted and synced, to its name, and
// syncs the directory: from then on the table exists.
absl::Status PublishNewTable(const std::string& dir);

// Whether dir/file exists (as anything: a symbolic link counts).
bool FileExists(const std::string& dir, const char* file);

// Removes the table's files and its directory (if then empty), under the
// writer's lock: FailedPrecondition while another handle has it open. OK
// when nothing is there.
absl::Status DestroyTableFiles(const std::string& dir);

// Copies the first `bytes` bytes of file `from` to a new file `to`
// (copy_file_range: the kernel copies, and shares the extents on file
// systems with reflinks) and syncs it.
absl::Status CopyFilePrefix(const std::string& from, const std::string& to,
                            uint64_t bytes);

// Syncs directory `dir` (the names made in it).
absl::Status SyncDirectory(const std::string& dir);
// The directory that holds `path` ("." for a bare name).
std::string ParentDirectory(const std::string& path);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_TABLE_FILES_H_
