// `roundtable experiment placement`: one row per scheme, parameter value,
// node count, key count and run; the measured moves and loads keep each
// scheme's promise; the CSV has the documented columns; bad options fail
// before any work.
#include "tools/roundtable/placement_experiment.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "roundtable/placement.h"
#include "gtest/gtest.h"

namespace roundtable::cli {
namespace {

PlacementOptions Small() {
  PlacementOptions o;
  o.nodes = {10, 40};
  o.keys = {20000};
  o.vnodes = {1, 100};
  o.cs = {1.1, 2.0};
  o.timing = false;
  o.progress = false;
  return o;
}

TEST(PlacementExperimentTest, OneRowPerCellAndPromisesHold) {
  PlacementOptions o = Small();
  o.runs = 2;
  std::ostringstream out;
  auto rows = RunPlacement(o, out);
  ASSERT_TRUE(rows.ok()) << rows.status();
  // 8 schemes, ring and bounded with two values each: 10 settings, times
  // 2 node counts, 1 key count, 2 runs.
  EXPECT_EQ(rows->size(), 10u * 2 * 2);
  for (const PlacementRow& r : *rows) {
    SCOPED_TRACE(r.algorithm + " " + r.params +
                 " n=" + std::to_string(r.nodes));
    EXPECT_EQ(r.keys, 20000u);
    EXPECT_GE(r.peak_to_average, 1.0);
    EXPECT_NEAR(r.peak_to_average,
                static_cast<double>(r.max_load) * r.nodes / r.keys, 1e-9);
    EXPECT_GT(r.moved_on_add, 0);
    EXPECT_GT(r.moved_on_remove, 0);
    const std::string& a = r.algorithm;
    if (a == "jump" || a == "rendezvous" || a == "ring" || a == "multiprobe") {
      EXPECT_EQ(r.stray_on_add, 0u);
      EXPECT_EQ(r.stray_on_remove, 0u);
    }
    if (a == "jump" || a == "rendezvous") {
      EXPECT_NEAR(r.moved_on_add * (r.nodes + 1), 1.0, 0.2);
      EXPECT_NEAR(r.moved_on_remove * r.nodes, 1.0, 0.2);
    }
    if (a == "bounded") {
      const double c = r.params == "c=1.1" ? 1.1 : 2.0;
      EXPECT_LE(r.max_load, mapping::BoundedCapacity(c, r.keys, 1, r.nodes));
    }
    if (a == "round") {
      // s0 = 8 fits 10 and 40 nodes with one to spare: unclamped.
      EXPECT_EQ(r.params, "s0=8");
      EXPECT_LE(r.peak_to_average, 1.0 + 1.0 / 8 + 0.1);
    }
  }
  EXPECT_NE(out.str().find("| multiprobe | probes=21 | 40 | 20000 |"),
            std::string::npos)
      << out.str();
}

TEST(PlacementExperimentTest, RoundKeepsS0BelowTheNodeCount) {
  PlacementOptions o = Small();
  o.algorithms = {"round"};
  o.nodes = {3};
  std::ostringstream out;
  auto rows = RunPlacement(o, out);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().params, "s0=2");
}

TEST(PlacementExperimentTest, CsvHasTheDocumentedColumns) {
  PlacementOptions o = Small();
  o.algorithms = {"jump", "maglev"};
  o.timing = true;
  o.csv_path = testing::TempDir() + "/placement.csv";
  std::ostringstream out;
  ASSERT_TRUE(RunPlacement(o, out).ok());
  std::ifstream in(o.csv_path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const std::vector<std::string> header = absl::StrSplit(line, ',');
  for (const char* column :
       {"algorithm", "nodes", "keys", "params", "peak_to_average",
        "sigma_over_mu", "moved_on_add", "moved_on_remove", "ns_per_lookup",
        "ns_per_lookup_string", "bytes_per_node"}) {
    EXPECT_NE(std::find(header.begin(), header.end(), column), header.end())
        << column;
  }
  int rows = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = absl::StrSplit(line, ',');
    ASSERT_EQ(cells.size(), header.size()) << line;
    const double ns = std::stod(cells[14]);
    EXPECT_GT(ns, 0) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 4);
  std::remove(o.csv_path.c_str());
}

TEST(PlacementExperimentTest, BadOptionsFailBeforeAnyWork) {
  std::ostringstream out;
  auto fails = [&](PlacementOptions o) { return !RunPlacement(o, out).ok(); };
  PlacementOptions o = Small();
  o.algorithms = {"ring", "chord"};
  EXPECT_TRUE(fails(o));
  o = Small();
  o.nodes = {1};
  EXPECT_TRUE(fails(o));
  o = Small();
  o.keys = {0};
  EXPECT_TRUE(fails(o));
  o = Small();
  o.cs = {1.0};
  EXPECT_TRUE(fails(o));
  o = Small();
  o.table_sizes = {1000};
  EXPECT_TRUE(fails(o));
  o = Small();
  o.probes = {0};
  EXPECT_TRUE(fails(o));
  o = Small();
  o.runs = 0;
  EXPECT_TRUE(fails(o));
  o = Small();
  o.plot_path = "x.png";
  EXPECT_TRUE(fails(o));
  EXPECT_TRUE(out.str().empty());
}

}  // namespace
}  // namespace roundtable::cli
