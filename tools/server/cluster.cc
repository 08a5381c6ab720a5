#include "tools/server/cluster.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/server/command_call.h"

namespace roundtable::server {
namespace {

using commands_internal::ParseUint64;

constexpr std::array<uint16_t, 256> kCrc16Table = [] {
  std::array<uint16_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021
                                                 : crc << 1);
    }
    table[i] = crc;
  }
  return table;
}();

bool IsHexId(std::string_view name) {
  return name.size() == 40 &&
         std::all_of(name.begin(), name.end(), [](char ch) {
           return absl::ascii_isxdigit(static_cast<unsigned char>(ch));
         });
}

// The fields of `line` split at blanks.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (true) {
    at = line.find_first_not_of(" \t\r", at);
    if (at == std::string_view::npos) return fields;
    const size_t end = std::min(line.find_first_of(" \t\r", at), line.size());
    fields.push_back(line.substr(at, end - at));
    at = end;
  }
}

std::string IdOf(std::string_view name) {
  if (IsHexId(name)) return commands_internal::Lower(name);
  const XXH128_hash_t h = XXH3_128bits(name.data(), name.size());
  return absl::StrFormat("%016x%016x%08x", h.high64, h.low64,
                         XXH32(name.data(), name.size(), 0));
}

}  // namespace

uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (const char ch : bytes) {
    crc = static_cast<uint16_t>(
        (crc << 8) ^ kCrc16Table[((crc >> 8) ^ static_cast<uint8_t>(ch)) & 0xff]);
  }
  return crc;
}

uint32_t KeySlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) % kClusterSlots;
}

absl::StatusOr<ClusterTopology> ClusterTopology::Load(const std::string& path,
                                                      std::string_view self) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster topology ", path, ": cannot be read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), self, path);
}

absl::StatusOr<ClusterTopology> ClusterTopology::Parse(std::string_view text,
                                                       std::string_view self,
                                                       std::string_view origin) {
  ClusterTopology t;
  t.owner_.assign(kClusterSlots, -1);
  bool found_self = false;
  int line_number = 0;
  while (!text.empty()) {
    const size_t newline = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(std::min(newline + 1, text.size()));
    ++line_number;
    auto bad = [&](std::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster topology ", std::string(origin), " line ", line_number,
          ": ", std::string(what)));
    };
    line = line.substr(0, line.find('#'));
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() < 2) return bad("expected NAME HOST:PORT SLOTS...");
    ClusterNode node;
    node.name = std::string(fields[0]);
    node.id = IdOf(fields[0]);
    for (const ClusterNode& other : t.nodes_) {
      if (other.name == node.name || other.id == node.id) {
        return bad(absl::StrCat("node ", node.name, " given twice"));
      }
    }
    const size_t colon = fields[1].rfind(':');
    uint64_t port = 0;
    if (colon == std::string_view::npos || colon == 0 ||
        !ParseUint64(fields[1].substr(colon + 1), &port) || port == 0 ||
        port > 65535) {
      return bad(absl::StrCat("address ", std::string(fields[1]),
                              " is not HOST:PORT"));
    }
    node.host = std::string(fields[1].substr(0, colon));
    node.port = static_cast<int>(port);
    const int32_t index = static_cast<int32_t>(t.nodes_.size());
    for (size_t i = 2; i < fields.size(); ++i) {
      const std::string_view range = fields[i];
      const size_t dash = range.find('-');
      uint64_t first = 0, last = 0;
      const bool parsed =
          dash == std::string_view::npos
              ? ParseUint64(range, &first) && ParseUint64(range, &last)
              : ParseUint64(range.substr(0, dash), &first) &&
                    ParseUint64(range.substr(dash + 1), &last);
      if (!parsed || first > last || last >= kClusterSlots) {
        return bad(absl::StrCat("slots ", std::string(range),
                                " are not a slot or a range within 0-",
                                kClusterSlots - 1));
      }
      for (uint64_t s = first; s <= last; ++s) {
        if (t.owner_[s] >= 0) {
          return bad(absl::StrCat("slot ", s, " is served by ",
                                  t.nodes_[t.owner_[s]].name, " already"));
        }
        t.owner_[s] = index;
      }
      t.assigned_ += static_cast<uint32_t>(last - first + 1);
      node.ranges.emplace_back(first, last);
    }
    std::sort(node.ranges.begin(), node.ranges.end());
    if (node.name == self) {
      found_self = true;
      t.self_ = t.nodes_.size();
    }
    t.nodes_.push_back(std::move(node));
  }
  if (!found_self) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster topology ", std::string(origin), ": no node ",
                     std::string(self)));
  }
  return t;
}

const ClusterNode* ClusterTopology::OwnerOf(uint32_t slot) const {
  const int32_t i = owner_[slot];
  return i < 0 ? nullptr : &nodes_[i];
}

namespace commands_internal {
namespace {

constexpr std::string_view kNoCluster =
    "ERR This instance has cluster support disabled";

const ClusterTopology* TopologyOf(Call& c) {
  const ClusterTopology* t = c.server.config()->cluster.get();
  if (t == nullptr) c.reply.Error(kNoCluster);
  return t;
}

std::string Address(const ClusterNode& n) {
  return absl::StrCat(n.host, ":", n.port);
}

void Info(Call& c, const ClusterTopology& t) {
  size_t serving = 0;
  for (const ClusterNode& n : t.nodes()) serving += !n.ranges.empty();
  const bool whole = t.assigned_slots() == kClusterSlots;
  c.reply.Verbatim(absl::StrCat(
      "cluster_state:", whole ? "ok" : "fail", "\r\n",
      "cluster_slots_assigned:", t.assigned_slots(), "\r\n",
      "cluster_slots_ok:", t.assigned_slots(), "\r\n",
      "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n",
      "cluster_known_nodes:", t.nodes().size(), "\r\n",
      "cluster_size:", serving, "\r\n",
      "cluster_current_epoch:", t.nodes().size(), "\r\n",
      "cluster_my_epoch:", t.self_index() + 1, "\r\n",
      "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n",
      "total_cluster_links_buffer_limit_exceeded:0\r\n"));
}

void Nodes(Call& c, const ClusterTopology& t) {
  std::string text;
  for (size_t i = 0; i < t.nodes().size(); ++i) {
    const ClusterNode& n = t.nodes()[i];
    // The bus port Redis would use; nothing listens there.
    const int bus = n.port + 10000 <= 65535 ? n.port + 10000 : 0;
    absl::StrAppend(&text, n.id, " ", Address(n), "@", bus, " ",
                    i == t.self_index() ? "myself,master" : "master",
                    " - 0 0 ", i + 1, " connected");
    for (const auto& [first, last] : n.ranges) {
      absl::StrAppend(&text, " ", first);
      if (last != first) absl::StrAppend(&text, "-", last);
    }
    text += "\n";
  }
  c.reply.Verbatim(text);
}

void Slots(Call& c, const ClusterTopology& t) {
  size_t ranges = 0;
  for (const ClusterNode& n : t.nodes()) ranges += n.ranges.size();
  c.reply.Array(ranges);
  for (const ClusterNode& n : t.nodes()) {
    for (const auto& [first, last] : n.ranges) {
      c.reply.Array(3);
      c.reply.Integer(first);
      c.reply.Integer(last);
      c.reply.Array(3);
      c.reply.Bulk(n.host);
      c.reply.Integer(n.port);
      c.reply.Bulk(n.id);
    }
  }
}

void Shards(Call& c, const ClusterTopology& t) {
  c.reply.Array(t.nodes().size());
  for (const ClusterNode& n : t.nodes()) {
    c.reply.Map(2);
    c.reply.Bulk("slots");
    c.reply.Array(2 * n.ranges.size());
    for (const auto& [first, last] : n.ranges) {
      c.reply.Integer(first);
      c.reply.Integer(last);
    }
    c.reply.Bulk("nodes");
    c.reply.Array(1);
    c.reply.Map(7);
    c.reply.Bulk("id");
    c.reply.Bulk(n.id);
    c.reply.Bulk("port");
    c.reply.Integer(n.port);
    c.reply.Bulk("ip");
    c.reply.Bulk(n.host);
    c.reply.Bulk("endpoint");
    c.reply.Bulk(n.host);
    c.reply.Bulk("role");
    c.reply.Bulk("master");
    c.reply.Bulk("replication-offset");
    c.reply.Integer(0);
    c.reply.Bulk("health");
    c.reply.Bulk("online");
  }
}

}  // namespace

bool RouteToSlot(Call& c, const Spec& spec) {
  const ClusterTopology* t = c.server.config()->cluster.get();
  if (t == nullptr || spec.first_key == 0) return true;
  const int n = static_cast<int>(c.args.size());
  const int last = spec.last_key < 0 ? n + spec.last_key : spec.last_key;
  std::optional<uint32_t> slot;
  for (int i = spec.first_key; i <= last && i < n; i += spec.step) {
    const uint32_t s = KeySlot(c.arg(i));
    if (slot && *slot != s) {
      c.reply.Error("CROSSSLOT Keys in request don't hash to the same slot");
      return false;
    }
    slot = s;
  }
  if (!slot) return true;
  const ClusterNode* owner = t->OwnerOf(*slot);
  if (owner == nullptr) {
    c.reply.Error("CLUSTERDOWN Hash slot not served");
    return false;
  }
  if (owner != &t->self()) {
    c.reply.Error(absl::StrCat("MOVED ", *slot, " ", Address(*owner)));
    return false;
  }
  return true;
}

void Cluster(Call& c) {
  const std::string sub = Lower(c.arg(1));
  if (sub == "help") {
    const std::vector<std::string_view> lines = {
        "CLUSTER <subcommand> [<arg> ...]. Subcommands are:",
        "INFO", "    The cluster's state and size.",
        "KEYSLOT <key>", "    The hash slot of <key>.",
        "MYID", "    This node's id.",
        "NODES", "    The nodes, in CLUSTER NODES's format.",
        "SHARDS", "    The nodes and their slots, as maps.",
        "SLOTS", "    The slot ranges and their nodes.",
        "HELP", "    This text."};
    c.reply.Array(lines.size());
    for (std::string_view l : lines) c.reply.Simple(l);
    return;
  }
  const ClusterTopology* t = TopologyOf(c);
  if (t == nullptr) return;
  const size_t argc = c.args.size();
  if (sub == "keyslot" && argc == 3) {
    c.reply.Integer(KeySlot(c.arg(2)));
  } else if (sub == "myid" && argc == 2) {
    c.reply.Bulk(t->self().id);
  } else if (sub == "info" && argc == 2) {
    Info(c, *t);
  } else if (sub == "nodes" && argc == 2) {
    Nodes(c, *t);
  } else if (sub == "slots" && argc == 2) {
    Slots(c, *t);
  } else if (sub == "shards" && argc == 2) {
    Shards(c, *t);
  } else if (sub == "keyslot" || sub == "myid" || sub == "info" ||
             sub == "nodes" || sub == "slots" || sub == "shards") {
    c.reply.Error(absl::StrCat("ERR wrong number of arguments for 'cluster|",
                               sub, "' command"));
  } else {
    c.reply.Error(absl::StrCat("ERR unknown subcommand '",
                               AV(c.arg(1).substr(0, 128)),
                               "'. Try CLUSTER HELP."));
  }
}

void ReadOnlyMode(Call& c) {
  if (TopologyOf(c) != nullptr) c.reply.Simple("OK");
}

}  // namespace commands_internal
}  // namespace roundtable::server
