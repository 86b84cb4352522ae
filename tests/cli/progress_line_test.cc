#include "hyperpipe/cli/progress_line.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace hyperpipe::cli {
namespace {

// Not a terminal (a log, a pipe): one full line per update, no carriage returns.
TEST(ProgressLine, OneLinePerUpdateInALog) {
  std::ostringstream out;
  ProgressLine progress(out, /*terminal=*/false);
  progress.update(1, 4, "decoder block, micro-batch 1");
  progress.update(4, 4, "head, micro-batch 8");
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_NE(text.find("  [######..................]  1/4 decoder block, micro-batch 1, "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" left\n"), std::string::npos) << text;  // the time left, while some is
  EXPECT_NE(text.find("  [########################]  4/4 head, micro-batch 8\n"), std::string::npos)
      << text;
}

// On a terminal: one line redrawn in place, blanked past a shorter update, ended once.
TEST(ProgressLine, RedrawsInPlaceOnATerminal) {
  std::ostringstream out;
  ProgressLine progress(out, /*terminal=*/true);
  progress.update(1, 2, "a long name of a layer kind");
  progress.update(2, 2, "short");
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(text.back(), '\n');
  const size_t second = text.rfind('\r');
  // The second draw covers the first one's width.
  EXPECT_GE(text.size() - second - 2, text.find('\r', 1) - 1) << text;
  EXPECT_FALSE(is_terminal(out));  // a string stream is no terminal
}

}  // namespace
}  // namespace hyperpipe::cli
