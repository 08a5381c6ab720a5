#include "tools/roundtable/table_commands.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <istream>
#include <ostream>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/internal/block_format.h"
#include "engine/internal/table_files.h"
#include "io/base/status_macros.h"
#include "tools/roundtable/progress.h"
#include "tools/roundtable/tsv.h"

namespace roundtable::cli {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<std::unique_ptr<Table>> OpenExisting(const std::string& dir,
                                                    bool read_only) {
  Options o;  // the stored layout
  o.create_if_missing = false;
  o.read_only = read_only;
  return Table::Open(o, dir);
}

uint64_t FileBytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint64_t TableBytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const char* file : internal::kDataFiles) {
    bytes += FileBytes(internal::TablePath(dir, file));
  }
  return bytes;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

absl::Status RunCreate(const std::string& dir, const Options& layout) {
  Options o = layout;
  o.error_if_exists = true;
  RT_ASSIGN_OR_RETURN(auto table, Table::Open(o, dir));
  return table->Close();
}

absl::Status RunPut(const std::string& dir, const std::string& key,
                    const std::string& value, bool raw) {
  RT_ASSIGN_OR_RETURN(const std::string k, Unescape(key));
  std::string v;
  if (raw) {
    v = value;
  } else {
    RT_ASSIGN_OR_RETURN(v, Unescape(value));
  }
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, false));
  RT_RETURN_IF_ERROR(table->Put(k, v));
  return table->Close();
}

absl::Status RunGet(const std::string& dir, const std::string& key,
                    const std::string& output, std::string_view end) {
  RT_ASSIGN_OR_RETURN(const std::string k, Unescape(key));
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, true));
  std::string value;
  RT_RETURN_IF_ERROR(table->Get(k, &value));
  std::ofstream file;
  if (!output.empty()) {
    file.open(output, std::ios::binary | std::ios::trunc);
    if (!file) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write ", output, ": ", std::strerror(errno)));
    }
  }
  std::ostream& out = output.empty() ? std::cout : file;
  out.write(value.data(), static_cast<std::streamsize>(value.size()));
  out << end;
  out.flush();
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("writing the value to ",
                     output.empty() ? "standard output" : output, " failed"));
  }
  return table->Close();
}

absl::Status RunDel(const std::string& dir, const std::string& key) {
  RT_ASSIGN_OR_RETURN(const std::string k, Unescape(key));
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, false));
  RT_RETURN_IF_ERROR(table->Delete(k));
  return table->Close();
}

absl::Status RunLoad(const std::string& dir, std::istream& in,
                     const LoadOptions& options) {
  if (options.batch == 0) {
    return absl::InvalidArgumentError("--batch must be at least 1");
  }
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, false));
  WriteOptions write_options;
  write_options.sync = options.sync;
  WriteBatch batch;
  auto flush = [&]() -> absl::Status {
    if (batch.Count() == 0) return absl::OkStatus();
    absl::Status s = table->Write(batch, write_options);
    batch.Clear();
    return s;
  };
  auto fail = [&](uint64_t number, const absl::Status& s) {
    table->Close().IgnoreError();
    return absl::Status(s.code(),
                        absl::StrCat("line ", number, ": ", s.message()));
  };
  // A line may be of any length (a value of any size, escaped); one
  // whose record no put takes is refused at its own line, not at the end
  // of its batch.
  const size_t max_record = table->max_record_bytes();
  const size_t max_key = table->max_key_bytes();
  std::string line;
  ProgressLine progress("load", options.progress);
  for (uint64_t number = 1;; ++number) {
    std::getline(in, line);
    if (in.bad()) {
      return fail(number, absl::UnavailableError(
                              "reading the input failed (an I/O error)"));
    }
    if (in.fail()) break;  // nothing left
    std::string_view text(line);
    if (text.find('\0') != std::string_view::npos) {
      return fail(number, absl::InvalidArgumentError(
                              "holds a NUL byte (escape it as \\x00)"));
    }
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty()) {
      if (in.eof()) break;
      continue;
    }
    const size_t tab = text.find('\t');
    if (tab == std::string::npos) {
      return fail(number, absl::InvalidArgumentError(
                              "expected an escaped key, a tab and a value"));
    }
    auto key = Unescape(text.substr(0, tab));
    auto value = Unescape(text.substr(tab + 1));
    absl::Status s = key.ok() ? value.status() : key.status();
    if (s.ok() && internal::EncodedSize(*key, *value) > max_record &&
        key->size() > max_key) {
      s = absl::InvalidArgumentError(absl::StrCat(
          "key of ", key->size(), " bytes exceeds the limit of ", max_key,
          " bytes (its value does not fit inline beside it)"));
    }
    if (s.ok()) {
      batch.Put(*key, *value);
      if (batch.Count() == options.batch) s = flush();
    }
    if (!s.ok()) return fail(number, s);
    if (s.ok()) progress.Add(1, key->size() + value->size());
    if (in.eof()) break;
  }
  if (absl::Status s = flush(); !s.ok()) {
    table->Close().IgnoreError();
    return s;
  }
  RT_RETURN_IF_ERROR(table->Close());
  progress.Finish();
  return absl::OkStatus();
}

absl::Status RunLocate(const std::string& dir, std::string_view key, bool json,
                       std::ostream& out) {
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, true));
  RT_ASSIGN_OR_RETURN(const KeyLocation at, table->Locate(key));
  const TableStats s = table->GetStats();
  const char* where = at.where == KeyLocation::Where::kBlock   ? "block"
                      : at.where == KeyLocation::Where::kStash ? "stash"
                      : at.where == KeyLocation::Where::kWriteBuffer
                          ? "write buffer"
                          : "absent";
  const uint64_t block_offset = at.block * s.block_size;
  if (json) {
    out << absl::StrFormat(
        "{\"hash\":%d,\"hash_hex\":\"0x%016x\",\"bucket\":%d,"
        "\"buckets\":%d,\"block\":%d,"
        "\"block_offset\":%d,\"where\":\"%s\",\"value_bytes\":%d,"
        "\"out_of_line\":%s,\"value_offset\":%d}\n",
        at.hash, at.hash, at.bucket, s.buckets, at.block, block_offset, where,
        at.value_bytes, at.out_of_line ? "true" : "false", at.value_offset);
  } else {
    out << absl::StrFormat(
        "hash    0x%016x\nbucket  %d of %d\nblock   %d (byte %d of "
        "blocks)\nwhere   %s\n",
        at.hash, at.bucket, s.buckets, at.block, block_offset, where);
    if (at.where != KeyLocation::Where::kAbsent) {
      out << (at.out_of_line
                  ? absl::StrFormat(
                        "value   %d bytes out of line, at byte %d of values\n",
                        at.value_bytes, at.value_offset)
                  : absl::StrFormat("value   %d bytes in line\n",
                                    at.value_bytes));
    }
  }
  return table->Close();
}

absl::Status RunScan(const std::string& dir, std::ostream& out) {
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, true));
  ProgressLine progress("scan", ProgressLine::OnTerminal());
  auto it = table->NewIterator();
  for (; it->Valid(); it->Next()) {
    out << Escape(it->key()) << '\t' << Escape(it->value()) << '\n';
    progress.Add(1, it->key().size() + it->value().size());
  }
  RT_RETURN_IF_ERROR(it->status());
  progress.Finish();
  return table->Close();
}

// `text` inside a JSON string: quotes, backslashes and control bytes
// escaped.
std::string JsonEscaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

std::string StatsJson(const TableStats& s, uint64_t records,
                      uint64_t file_bytes) {
  auto ledger = [](const io::IoStats& p) {
    return absl::StrFormat(
        "{\"blocks_read\":%d,\"bytes_read\":%d,\"blocks_written\":%d,"
        "\"bytes_written\":%d,\"read_ops\":%d,\"write_ops\":%d,"
        "\"submissions\":%d,\"syncs\":%d,\"wait_ns\":%d}",
        p.blocks_read, p.bytes_read, p.blocks_written, p.bytes_written,
        p.read_ops, p.write_ops, p.submissions, p.syncs, p.wait_ns);
  };
  const LogicalLedger& l = s.logical;
  return absl::StrFormat(
      "{\"buckets\":%d,\"min_buckets\":%d,\"records\":%d,"
      "\"stored_records\":%d,"
      "\"stash_records\":%d,"
      "\"stash_bytes\":%d,\"buffered_records\":%d,\"buffered_deletes\":%d,"
      "\"buffered_bytes\":%d,"
      "\"block_size\":%d,\"s0\":%d,\"epsilon\":%g,"
      "\"data_bytes\":%d,\"utilization\":%.6f,\"file_bytes\":%d,"
      "\"logical\":{\"get_block_reads\":%d,\"put_block_reads\":%d,"
      "\"put_block_writes\":%d,\"delete_block_reads\":%d,"
      "\"delete_block_writes\":%d,\"grow_block_reads\":%d,"
      "\"grow_block_writes\":%d,\"shrink_block_reads\":%d,"
      "\"shrink_block_writes\":%d,\"stash_copy_block_writes\":%d,"
      "\"buffer_drains\":%d,\"distribute_drains\":%d,\"grows\":%d,"
      "\"shrinks\":%d},"
      "\"value_count\":%d,\"value_bytes\":%d,\"value_file_bytes\":%d,"
      "\"value_free_bytes\":%d,"
      "\"held_blocks\":%d,\"wal_bytes\":%d,\"checkpoints\":%d,"
      "\"recovered_records\":%d,\"recovered_journal\":%s,"
      "\"recovery_ns\":%d,"
      "\"physical_block_file\":%s,\"physical_stash_copy\":%s,"
      "\"physical_wal\":%s,\"physical_journal\":%s,"
      "\"physical_write_buffer_copy\":%s,\"physical_values\":%s,"
      "\"physical_spacemap\":%s,\"physical_blockmap\":%s}",
      s.buckets, s.min_buckets, records, s.records, s.stash_records,
      s.stash_bytes, s.buffered_records, s.buffered_deletes, s.buffered_bytes,
      s.block_size, s.s0,
      s.epsilon, s.data_bytes, s.utilization, file_bytes, l.get_reads,
      l.put_reads, l.put_writes, l.delete_reads, l.delete_writes, l.grow_reads,
      l.grow_writes, l.shrink_reads, l.shrink_writes, l.stash_copy_writes,
      l.buffer_drains, l.distribute_drains, l.grows, l.shrinks, s.value_count,
      s.value_bytes, s.value_file_bytes, s.value_free_bytes, s.held_blocks,
      s.wal_bytes, s.checkpoints, s.recovered_records,
      s.recovered_journal ? "true" : "false", s.recovery_ns,
      ledger(s.physical_blocks), ledger(s.physical_stash),
      ledger(s.physical_wal), ledger(s.physical_journal),
      ledger(s.physical_buffer), ledger(s.physical_values),
      ledger(s.physical_spacemap), ledger(s.physical_blockmap));
}

absl::Status RunStats(const std::string& dir, bool json, std::ostream& out) {
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, true));
  RT_ASSIGN_OR_RETURN(const uint64_t records, table->Count());
  const TableStats s = table->GetStats();
  const uint64_t bytes = TableBytes(dir);
  if (json) {
    out << StatsJson(s, records, bytes) << '\n';
  } else {
    out << absl::StrFormat(
        "records        %d\nbuckets        %d\nstash records  %d (%.4f%%)\n"
        "buffered       %d (%d deletes)\n"
        "data bytes     %d\nutilization    %.4f\nblock size     %d\n"
        "s0             %d\nepsilon        %g\n"
        "large values   %d (%d bytes, out of line)\n"
        "value file     %d bytes (%d free)\nfile bytes     %d\n",
        records, s.buckets, s.stash_records,
        records ? 100.0 * s.stash_records / records : 0.0, s.buffered_records,
        s.buffered_deletes, s.data_bytes, s.utilization, s.block_size, s.s0,
        s.epsilon, s.value_count, s.value_bytes, s.value_file_bytes, s.value_free_bytes,
        bytes);
  }
  return table->Close();
}

absl::Status RunCheck(const std::string& dir, bool json, std::ostream& out) {
  RT_ASSIGN_OR_RETURN(auto table, OpenExisting(dir, true));
  ProgressLine progress("check", ProgressLine::OnTerminal(), "buckets");
  const uint64_t block = table->GetStats().block_size;
  uint64_t shown = 0;
  absl::Status checked = table->Check([&](uint64_t buckets, uint64_t) {
    progress.Add(buckets - shown, (buckets - shown) * block);
    shown = buckets;
  });
  if (checked.ok()) {
    const uint64_t m = table->GetStats().buckets;
    progress.Add(m - shown, (m - shown) * block);
    progress.Finish();
  }
  absl::StatusOr<uint64_t> records = checked.ok() ? table->Count() : 0;
  if (checked.ok()) checked = records.status();
  const TableStats s = table->GetStats();
  if (json) {
    out << absl::StrFormat(
        "{\"ok\":%s,\"error\":\"%s\",\"records\":%d,\"buckets\":%d,"
        "\"stash_records\":%d,\"buffered_records\":%d,\"value_count\":%d,"
        "\"value_bytes\":%d}\n",
        checked.ok() ? "true" : "false",
        JsonEscaped(std::string(checked.message())),
        checked.ok() ? *records : 0, s.buckets, s.stash_records,
        s.buffered_records, s.value_count, s.value_bytes);
  }
  RT_RETURN_IF_ERROR(checked);
  if (json) return table->Close();
  out << absl::StrFormat(
      "ok: %d records in %d buckets (%d in the stash, %d puts and deletes "
      "in the write buffer), %d values out of line, every checksum and "
      "placement verified\n",
      *records, s.buckets, s.stash_records, s.buffered_records, s.value_count);
  return table->Close();
}

absl::Status RunDemo(const std::string& dir, uint64_t records, bool progress,
                     bool json, std::ostream& out) {
  Options o;
  o.error_if_exists = true;
  RT_ASSIGN_OR_RETURN(auto table, Table::Open(o, dir));
  // Keys: 16 hex digits of a keyed permutation of 0 .. records-1 (an odd
  // multiplier and an xor), so they are distinct and look random.
  auto key_of = [](uint64_t i) {
    return absl::StrFormat("%016x", (i * 0x9E3779B97F4A7C15ULL) ^ 0x5bd1e995);
  };
  const std::string value(100, 'v');

  auto phase = [&](const char* label, uint64_t n, auto op) -> absl::Status {
    ProgressLine line(absl::StrCat("demo ", label), progress, "records", n);
    const uint64_t step = std::max<uint64_t>(1, n / 1000);
    for (uint64_t i = 0; i < n; ++i) {
      RT_RETURN_IF_ERROR(op(i));
      if ((i + 1) % step == 0) line.Add(step);
    }
    return absl::OkStatus();  // the demo's report follows: no summary
  };

  auto start = Clock::now();
  RT_RETURN_IF_ERROR(phase("load", records, [&](uint64_t i) {
    return table->Put(key_of(i), value);
  }));
  // The puts still in the write buffer reach their blocks, so that the
  // load's figures count every record.
  RT_RETURN_IF_ERROR(table->Flush());
  const double load_s = Seconds(start);
  const TableStats loaded = table->GetStats();

  start = Clock::now();
  RT_RETURN_IF_ERROR(phase("read", records, [&](uint64_t i) -> absl::Status {
    RT_ASSIGN_OR_RETURN(const std::string v, table->Get(key_of(i)));
    if (v != value) {
      return absl::DataLossError(absl::StrCat("wrong value for record ", i));
    }
    return absl::OkStatus();
  }));
  const double read_s = Seconds(start);
  const TableStats read = table->GetStats();

  start = Clock::now();
  const uint64_t half = records / 2;
  RT_RETURN_IF_ERROR(phase("delete", half, [&](uint64_t i) {
    return table->Delete(key_of(2 * i));
  }));
  const double delete_s = Seconds(start);
  const TableStats after = table->GetStats();
  RT_RETURN_IF_ERROR(table->Close());

  auto per = [](uint64_t transfers, uint64_t ops) {
    return ops ? static_cast<double>(transfers) / ops : 0.0;
  };
  const LogicalLedger& l = loaded.logical;
  const double put_transfers = per(l.put_reads + l.put_writes + l.grow_reads +
                                       l.grow_writes + l.stash_copy_writes,
                                   records);
  const double get_reads =
      per(read.logical.get_reads - loaded.logical.get_reads, records);
  const double delete_transfers =
      per(after.logical.delete_reads + after.logical.delete_writes +
              after.logical.shrink_reads + after.logical.shrink_writes +
              after.logical.stash_copy_writes - read.logical.stash_copy_writes,
          half);
  const double stash_percent =
      loaded.records ? 100.0 * loaded.stash_records / loaded.records : 0.0;
  if (json) {
    out << absl::StrFormat(
        "{\"records\":%d,\"puts_per_s\":%.0f,\"transfers_per_put\":%.3f,"
        "\"grows\":%d,\"gets_per_s\":%.0f,\"reads_per_get\":%.3f,"
        "\"deletes_per_s\":%.0f,\"transfers_per_delete\":%.3f,"
        "\"shrinks\":%d,\"loaded_buckets\":%d,\"loaded_utilization\":%.4f,"
        "\"loaded_stash_records\":%d,\"final_records\":%d,"
        "\"final_buckets\":%d,\"final_utilization\":%.4f,"
        "\"file_bytes\":%d,\"dir\":\"%s\"}\n",
        records, records / load_s, put_transfers, l.grows, records / read_s,
        get_reads, half / delete_s, delete_transfers, after.logical.shrinks,
        loaded.buckets, loaded.utilization, loaded.stash_records, after.records,
        after.buckets, after.utilization, TableBytes(dir), JsonEscaped(dir));
    return absl::OkStatus();
  }
  out << absl::StrFormat(
      "roundtable demo: %d records of 16-byte keys and 100-byte values\n"
      "  load    %9.0f puts/s     %.2f block transfers/put (%d grows)\n"
      "  read    %9.0f gets/s     %.2f block reads/get\n"
      "  delete  %9.0f deletes/s  %.2f block transfers/delete (%d shrinks)\n"
      "  after loading:  %d buckets, utilization %.3f, stash %d records "
      "(%.3f%%)\n"
      "  after deleting: %d records in %d buckets, utilization %.3f\n"
      "  files: %.1f MiB in %s\n",
      records, records / load_s, put_transfers, l.grows, records / read_s,
      get_reads, half / delete_s, delete_transfers, after.logical.shrinks,
      loaded.buckets, loaded.utilization, loaded.stash_records, stash_percent,
      after.records, after.buckets, after.utilization,
      TableBytes(dir) / 1048576.0, dir);
  return absl::OkStatus();
}

}  // namespace roundtable::cli
