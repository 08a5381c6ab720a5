// The CLI's escaping: exact forms, round trips of arbitrary bytes, and clear
// errors for bad escapes.
#include "tools/roundtable/tsv.h"

#include <random>

#include "gtest/gtest.h"

namespace roundtable::cli {
namespace {

TEST(TsvTest, EscapesTheDocumentedBytes) {
  EXPECT_EQ(Escape("plain text"), "plain text");
  EXPECT_EQ(Escape("a\tb\nc\\d\re"), "a\\tb\\nc\\\\d\\re");
  EXPECT_EQ(Escape(std::string("\x00\x1f\x7f\xff", 4)), "\\x00\\x1f\\x7f\\xff");
}

TEST(TsvTest, UnescapeUndoesEscapeOnRandomBytes) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string text = Escape(bytes);
    EXPECT_EQ(text.find('\t'), std::string::npos);
    EXPECT_EQ(text.find('\n'), std::string::npos);
    auto back = Unescape(text);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(*back, bytes);
  }
  EXPECT_EQ(*Unescape("\\x4A\\x4b"), "JK");
}

TEST(TsvTest, BadEscapesAreInvalidArgument) {
  for (const char* bad : {"\\", "a\\q", "\\x", "\\x4", "\\xzz"}) {
    EXPECT_EQ(Unescape(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace roundtable::cli
