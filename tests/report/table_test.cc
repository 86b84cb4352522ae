#include "hyperpipe/report/table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace hyperpipe::report {
namespace {

TEST(Table, AlignsColumnsAndNumbersRight) {
  Table table({"Name", ">Count"});
  table.add_row({"a", "1"});
  table.add_row({"longer", "1234"});
  std::ostringstream out;
  table.print(out, "  ");
  EXPECT_EQ(out.str(),
            "  Name    Count\n"
            "  a           1\n"
            "  longer   1234\n");
}

TEST(Table, MultiByteCharactersTakeOneColumn) {
  Table table({"Shape", "Next"});
  table.add_row({"2×4", "a → b"});
  table.add_row({"16x1", "c"});
  std::ostringstream out;
  table.print(out);
  EXPECT_EQ(out.str(), "Shape  Next\n2×4    a → b\n16x1   c\n");
}

TEST(Table, ShortRowsArePadded) {
  Table table({"A", "B"});
  table.add_row({"x"});
  std::ostringstream out;
  table.print(out);
  EXPECT_EQ(out.str(), "A  B\nx\n");
}

}  // namespace
}  // namespace hyperpipe::report
