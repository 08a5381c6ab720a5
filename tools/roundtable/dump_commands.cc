#include "tools/roundtable/dump_commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/batch_writer.h"
#include "engine/internal/table_files.h"
#include "io/base/status_macros.h"
#include "roundtable/table.h"
#include "tools/roundtable/dump_file.h"
#include "tools/roundtable/progress.h"

namespace roundtable::cli {

absl::Status RunDump(const std::string& dir, const std::string& path) {
  RT_ASSIGN_OR_RETURN(Options o, Table::ReadLayout(dir));
  const Options layout = o;
  o.read_only = true;
  o.create_if_missing = false;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> table, Table::Open(o, dir));
  std::ofstream file;
  const bool to_stdout = path == "-";
  if (!to_stdout) {
    file.open(path, std::ios::binary | std::ios::trunc);
    if (!file) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
    }
  }
  std::ostream& out = to_stdout ? std::cout : file;
  DumpWriter writer(&out, layout);
  ProgressLine progress("dump", ProgressLine::OnTerminal());
  auto it = table->NewIterator();
  for (; it->Valid() && out; it->Next()) {
    writer.Add(it->key(), it->value());
    progress.Add(1, it->key().size() + it->value().size());
  }
  absl::Status status = it->status();
  if (status.ok()) status = writer.Finish();
  if (status.ok() && !to_stdout) {
    file.close();
    if (!file) status = absl::UnavailableError("writing the dump failed");
  }
  if (!status.ok()) {
    if (!to_stdout) std::remove(path.c_str());
    return status;
  }
  progress.Finish();
  return table->Close();
}

absl::Status RunRestore(const std::string& path, const std::string& dir) {
  struct stat st;
  if (stat((dir + "/blocks").c_str(), &st) == 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("table ", dir, " exists; restore makes a new one"));
  }
  std::ifstream file;
  const bool from_stdin = path == "-";
  if (!from_stdin) {
    file.open(path, std::ios::binary);
    if (!file) {
      return absl::NotFoundError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    }
  }
  DumpReader reader(from_stdin ? &std::cin : &file);
  RT_ASSIGN_OR_RETURN(Options o, reader.ReadHeader());
  // Built beside the target, renamed into place once whole.
  const std::string building = dir + ".restoring";
  RT_RETURN_IF_ERROR(DestroyTable(building));
  o.error_if_exists = true;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> table, Table::Open(o, building));
  auto restore = [&]() -> absl::Status {
    ProgressLine progress("restore", ProgressLine::OnTerminal());
    BatchWriter copy(table.get(), progress.Totals());
    std::string key, value;
    while (true) {
      RT_ASSIGN_OR_RETURN(const bool more, reader.Next(&key, &value));
      if (!more) break;
      RT_RETURN_IF_ERROR(copy.Put(key, value));
    }
    RT_RETURN_IF_ERROR(copy.Finish());
    RT_RETURN_IF_ERROR(table->Flush());
    RT_RETURN_IF_ERROR(table->Close());
    if (rename(building.c_str(), dir.c_str()) != 0) {
      return absl::UnavailableError(absl::StrCat(
          "rename ", building, " to ", dir, ": ", std::strerror(errno)));
    }
    RT_RETURN_IF_ERROR(internal::SyncDirectory(internal::ParentDirectory(dir)));
    progress.Finish();
    return absl::OkStatus();
  };
  absl::Status status = restore();
  if (!status.ok()) {
    table.reset();
    DestroyTable(building).IgnoreError();
  }
  return status;
}

absl::Status RunSalvage(const std::string& dir, const std::string& copy,
                        bool json, std::ostream& out) {
  ProgressLine progress("salvage", ProgressLine::OnTerminal());
  RT_ASSIGN_OR_RETURN(const SalvageReport report,
                      SalvageTable(dir, copy, progress.Totals()));
  progress.Finish();
  if (json) {
    out << "{\"saved\":" << report.saved
        << ",\"damaged_blocks\":" << report.damaged_blocks
        << ",\"lost\":" << report.lost
        << ",\"lost_values\":" << report.lost_values
        << ",\"opened\":" << (report.opened ? "true" : "false")
        << ",\"layout_known\":" << (report.layout_known ? "true" : "false")
        << ",\"damaged_copy_blocks\":" << report.damaged_copy_blocks
        << ",\"log_records\":" << report.log_records << "}\n";
    return absl::OkStatus();
  }
  out << report.saved << " records saved in " << copy << "; "
      << report.damaged_blocks << " damaged blocks, "
      << (report.layout_known ? absl::StrCat(report.lost)
                              : "an unknown number of")
      << " records lost with them, " << report.lost_values
      << " damaged values\n";
  if (!report.opened) {
    out << "the table could not be opened: its files were read one by one ("
        << report.damaged_copy_blocks
        << " damaged blocks of the stash and write buffer copies, "
        << report.log_records << " log records read)\n";
  }
  if (!report.layout_known) {
    out << "no superblock was valid: the block size was found from the "
           "blocks; s0, epsilon and the hash seed are the defaults\n";
  }
  return absl::OkStatus();
}

absl::Status RunRebuild(const std::string& dir, const Options& layout) {
  ProgressLine progress("rebuild", ProgressLine::OnTerminal());
  RT_RETURN_IF_ERROR(RebuildTable(dir, layout, progress.Totals()));
  progress.Finish();
  return absl::OkStatus();
}

absl::Status RunBackup(const std::string& dir, const std::string& copy) {
  Options o;  // the stored layout
  o.create_if_missing = false;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> table, Table::Open(o, dir));
  ProgressLine progress("backup", ProgressLine::OnTerminal());
  RT_RETURN_IF_ERROR(table->Backup(copy));
  if (ProgressLine::OnTerminal()) {  // the summary: the copy's records and
                                     // bytes
    RT_ASSIGN_OR_RETURN(const uint64_t records, table->Count());
    uint64_t bytes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(copy)) {
      if (entry.is_regular_file()) bytes += entry.file_size();
    }
    progress.Add(records, bytes);
    progress.Finish();
  }
  return table->Close();
}

}  // namespace roundtable::cli
