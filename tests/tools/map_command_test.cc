// roundtable map, called in-process: parsing, output format and errors.
#include "tools/roundtable/map_command.h"

#include <sstream>

#include "gtest/gtest.h"

namespace roundtable::cli {
namespace {

struct Result {
  absl::Status status;
  std::string out;
};

Result RunCommand(const MapOptions& options, const std::string& input = "") {
  std::istringstream in(input);
  std::ostringstream out;
  Result r{RunMap(options, in, out), ""};
  r.out = out.str();
  return r;
}

MapOptions Options(uint64_t s0, uint64_t buckets) {
  MapOptions o;
  o.s0 = s0;
  o.buckets = buckets;
  return o;
}

TEST(ParseUint64Test, AcceptsDecimalAndHex) {
  EXPECT_EQ(ParseUint64("0"), 0u);
  EXPECT_EQ(ParseUint64("  42\t"), 42u);
  EXPECT_EQ(ParseUint64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseUint64("0xffffffffffffffff"), UINT64_MAX);
  EXPECT_EQ(ParseUint64("0X9E3779B97F4A7C15"), 0x9e3779b97f4a7c15u);
  EXPECT_EQ(ParseUint64("0x0\r"), 0u);
  EXPECT_EQ(ParseUint64("007"), 7u);
}

TEST(ParseUint64Test, RejectsEverythingElse) {
  for (const char* bad : {"", " ", "-1", "+1", "18446744073709551616", "0x",
                          "0x1ffffffffffffffff", "12a", "abc", "1 2", "0xg",
                          "1.5", "1e3", "0b101"}) {
    EXPECT_FALSE(ParseUint64(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(RunMapTest, MapsEachLine) {
  const Result r =
      RunCommand(Options(3, 35),
                 "0x0\n0x8000000000000000\n\n18446744073709551615\n"
                 "0x5fffffffffffffff\n0x6000000000000000\n");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.out, "0\n3\n31\n34\n13\n");
}

TEST(RunMapTest, BadLineIsReportedWithItsNumber) {
  const Result r = RunCommand(Options(3, 35), "1\n2\nbanana\n4\n");
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("line 3"), absl::string_view::npos)
      << r.status;
  EXPECT_NE(r.status.message().find("banana"), absl::string_view::npos);
  EXPECT_EQ(r.out, "0\n0\n");  // the lines before it were mapped
}

TEST(RunMapTest, BadShapesFailBeforeAnyOutput) {
  for (const auto& [s0, m] :
       std::vector<std::pair<uint64_t, uint64_t>>{{0, 10}, {11, 10}, {1, 0}}) {
    const Result r = RunCommand(Options(s0, m), "1\n");
    EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument)
        << s0 << " " << m;
    EXPECT_EQ(r.out, "");
  }
}

TEST(RunMapTest, GrowPrintsTouchedBucketsNewLast) {
  MapOptions o = Options(3, 32);
  o.grow = 3;
  const Result r = RunCommand(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.out, "0 1 2 24 32\n12 16 20 25 33\n6 8 10 26 34\n");
}

TEST(RunMapTest, ShrinkPrintsTouchedBucketsReleasedLast) {
  MapOptions o = Options(3, 35);
  o.shrink = 3;
  const Result r = RunCommand(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.out, "6 8 10 26 34\n12 16 20 25 33\n0 1 2 24 32\n");
}

TEST(RunMapTest, ShrinkBelowS0IsRefusedUpFront) {
  MapOptions o = Options(3, 5);
  o.shrink = 3;
  const Result r = RunCommand(o);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.out, "");
  o.shrink = 2;
  EXPECT_TRUE(RunCommand(o).status.ok());
}

TEST(RunMapTest, GrowAndShrinkTogetherAreRefused) {
  MapOptions o = Options(3, 5);
  o.grow = 1;
  o.shrink = 1;
  EXPECT_EQ(RunCommand(o).status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(RunMapTest, OtherMappingsByName) {
  MapOptions o = Options(1, 8);
  o.mapping = "linear-litwin";
  const Result r = RunCommand(o, "5\n13\n");
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.out, "5\n5\n");
  o.mapping = "nonsense";
  EXPECT_EQ(RunCommand(o, "1\n").status.code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace roundtable::cli
