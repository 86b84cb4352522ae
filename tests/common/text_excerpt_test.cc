#include "hyperpipe/common/text_excerpt.h"

#include <gtest/gtest.h>

namespace hyperpipe {
namespace {

TEST(PrintableExcerpt, KeepsTextAndUtf8) {
  EXPECT_EQ(printable_excerpt("A100-40GB"), "A100-40GB");
  EXPECT_EQ(printable_excerpt("Grüße, 東京"), "Grüße, 東京");
}

TEST(PrintableExcerpt, EscapesControlsAndInvalidBytes) {
  EXPECT_EQ(printable_excerpt("a\nb\tc\x1b[0m"), "a\\nb\\tc\\x1b[0m");
  EXPECT_EQ(printable_excerpt("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable_excerpt("\xc3"), "\\xc3");                    // truncated sequence
  EXPECT_EQ(printable_excerpt("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable_excerpt("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable_excerpt(std::string("a\0b", 3)), "a\\x00b");
}

TEST(PrintableExcerpt, CutsAfterMaxCharacters) {
  EXPECT_EQ(printable_excerpt(std::string(100, 'x'), 5), "xxxxx...");
  EXPECT_EQ(printable_excerpt("ééééé", 3), "ééé...");  // characters, not bytes
  EXPECT_EQ(printable_excerpt("abc", 3), "abc");
}

TEST(PrintableMessage, KeepsLinesEscapesTheRestCutsNothing) {
  EXPECT_EQ(printable_message("a: 1\n\tb\x1b[2J\xff"), "a: 1\n\tb\\x1b[2J\\xff");
  EXPECT_EQ(printable_message(std::string(100, 'x')).size(), 100u);
}

TEST(IsPrintableUtf8, AcceptsTextRejectsGarbage) {
  EXPECT_TRUE(is_printable_utf8("tiny-gpt ü"));
  EXPECT_FALSE(is_printable_utf8("tiny\xff"));
  EXPECT_FALSE(is_printable_utf8("a\nb"));
}

}  // namespace
}  // namespace hyperpipe
