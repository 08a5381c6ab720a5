// The in-RAM stash against a model (a map from bucket to key-value map):
// random adds, value changes, filtered removals and whole-list takes over
// buckets that grow in number as the test goes (the lists' arrays grow
// by chunks of 1,024 buckets under lists already there, three times), with
// Find checked for every key, and the
// filters, the counts and the walk of the lists in bucket order checked
// throughout.
#include "engine/internal/stash.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

// A hash that puts few distinct values in the filter bits, so that filter
// bits collide and probes meet other keys' hashes.
uint64_t TestHash(std::string_view key) {
  return (std::hash<std::string_view>()(key) % 5) << 16;
}

TEST(StashTest, MatchesAModel) {
  std::mt19937_64 rng(42);
  Stash stash;
  std::map<uint64_t, std::map<std::string, std::string>> model;
  auto model_records = [&] {
    uint64_t n = 0, bytes = 0;
    for (const auto& [b, list] : model) {
      n += list.size();
      for (const auto& [k, v] : list) bytes += EncodedSize(k, v);
    }
    return std::pair(n, bytes);
  };
  std::vector<std::string> keys;
  for (int k = 0; k < 400; ++k) keys.push_back("k" + std::to_string(k));
  for (int step = 0; step < 20000; ++step) {
    const uint64_t buckets = 50 + step / 6;  // 50 to 3382
    // Half the steps in the newest 64 buckets, where the lists are.
    const uint64_t b =
        rng() % 2 ? rng() % buckets
                  : buckets - 1 - rng() % std::min<uint64_t>(64, buckets);
    const std::string& key = keys[rng() % keys.size()];
    const int op = static_cast<int>(rng() % 10);
    Record* found = stash.Find(b, key, TestHash(key));
    auto& list = model[b];
    ASSERT_EQ(found != nullptr, list.count(key) == 1) << "step " << step;
    if (op < 5) {
      const std::string value(rng() % 20, 'v');
      if (found != nullptr) {
        stash.SetValue(found, value);
      } else {
        stash.Add(b, TestHash(key), Record{key, value});
      }
      list[key] = value;
    } else if (op < 9) {
      // Remove the records whose value length is odd.
      stash.Filter(b,
                   [](const Record& r) { return r.value().size() % 2 == 0; });
      std::erase_if(list, [](const auto& kv) { return kv.second.size() % 2; });
    } else {
      const Stash::Taken taken = stash.Take(b);
      std::map<std::string, std::string> got;
      for (const Stash::Entry& e : taken) {
        ASSERT_EQ(e.hash, TestHash(e.record.key())) << "step " << step;
        got.emplace(e.record.key(), e.record.value());
      }
      ASSERT_EQ(got, list) << "step " << step;
      list.clear();
    }
    if (list.empty()) model.erase(b);
    ASSERT_EQ(stash.ListOf(b) != nullptr, model.count(b) == 1);
    const auto [n, bytes] = model_records();
    ASSERT_EQ(stash.records(), n);
    ASSERT_EQ(stash.bytes(), bytes);
    if (step % 500 == 0) {
      ASSERT_TRUE(stash.Consistent(TestHash));
      std::map<uint64_t, std::map<std::string, std::string>> walked;
      uint64_t last = 0;
      bool first = true;
      stash.ForEachList([&](uint64_t bb, const Stash::List& l) {
        EXPECT_TRUE(first || bb > last) << "bucket " << bb << " after " << last;
        first = false;
        last = bb;
        for (const Stash::Entry& e : l) {
          walked[bb].emplace(e.record.key(), e.record.value());
        }
      });
      ASSERT_EQ(walked, model) << "step " << step;
      for (uint64_t bb = 0; bb < buckets; ++bb) {
        for (const std::string& kk : keys) {
          const Record* r = stash.Find(bb, kk, TestHash(kk));
          auto it = model.find(bb);
          const bool present = it != model.end() && it->second.count(kk);
          ASSERT_EQ(r != nullptr, present) << bb << " " << kk;
          if (present) {
            ASSERT_EQ(r->value(), it->second.at(kk));
          }
        }
      }
    }
  }
}

TEST(StashTest, ConsistentNoticesAWrongHash) {
  Stash stash;
  stash.Add(3, TestHash("a"), Record{"a", "1"});
  EXPECT_TRUE(stash.Consistent(TestHash));
  EXPECT_FALSE(
      stash.Consistent([](std::string_view k) { return TestHash(k) + 1; }));
}

}  // namespace
}  // namespace roundtable::internal
