#include "hyperpipe/common/quantity.h"

#include <gtest/gtest.h>

namespace hyperpipe {
namespace {

TEST(ParseQuantity, BytesWithUnitsAndDefault) {
  EXPECT_DOUBLE_EQ(*parse_bytes("80 GiB"), 80 * kGiB);
  EXPECT_DOUBLE_EQ(*parse_bytes("80GiB"), 80 * kGiB);
  EXPECT_DOUBLE_EQ(*parse_bytes("16 GB"), 16e9);
  EXPECT_DOUBLE_EQ(*parse_bytes("40"), 40 * kGiB);
  EXPECT_DOUBLE_EQ(*parse_bytes("512 MiB"), 512 * kMiB);
  EXPECT_FALSE(parse_bytes("-1 GiB"));
  EXPECT_FALSE(parse_bytes("0"));
  EXPECT_FALSE(parse_bytes("12 parsecs"));
  EXPECT_FALSE(parse_bytes("lots"));
  EXPECT_FALSE(parse_bytes(""));
}

TEST(ParseQuantity, BandwidthInBytesOrBits) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth("25 GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("100 Gbit/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("100 Gb/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("300"), 300e9);
  EXPECT_FALSE(parse_bandwidth("0 GB/s"));
  EXPECT_FALSE(parse_bandwidth("10 GB"));
}

TEST(ParseQuantity, DurationMayBeZero) {
  EXPECT_DOUBLE_EQ(*parse_duration("5 us"), 5e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5 ms"), 1.5e-3);
  EXPECT_DOUBLE_EQ(*parse_duration("2"), 2e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("0"), 0.0);
  EXPECT_FALSE(parse_duration("-3 us"));
  EXPECT_FALSE(parse_duration("3 fortnights"));
}

TEST(ParseQuantity, FlopRate) {
  EXPECT_DOUBLE_EQ(*parse_flop_rate("312 TFLOP/s"), 312e12);
  EXPECT_DOUBLE_EQ(*parse_flop_rate("19.5"), 19.5e12);
  EXPECT_DOUBLE_EQ(*parse_flop_rate("1 PFLOPS"), 1e15);
}

TEST(ParseQuantity, FiniteAndNonZeroAfterConversion) {
  // Finite as written, infinite or zero in base units.
  EXPECT_FALSE(parse_bandwidth("1e308 TB/s"));
  EXPECT_FALSE(parse_bytes("1e308 GiB"));
  EXPECT_FALSE(parse_bytes("1e308"));  // GiB by default
  EXPECT_FALSE(parse_flop_rate("1e300 PFLOPS"));
  EXPECT_DOUBLE_EQ(*parse_duration("0 ms"), 0.0);  // zero where zero is allowed
  EXPECT_DOUBLE_EQ(*parse_bandwidth("1e300 B/s"), 1e300);
}

// "1 micro-batches", "1 stages", "over 1 GPUs" were printed; a count takes its noun's
// number.
TEST(FormatQuantity, CountedNounsAgreeWithTheCount) {
  EXPECT_EQ(counted(1, "stage"), "1 stage");
  EXPECT_EQ(counted(4, "stage"), "4 stages");
  EXPECT_EQ(counted(0, "GPU"), "0 GPUs");
  EXPECT_EQ(counted(1, "micro-batch", "micro-batches"), "1 micro-batch");
  EXPECT_EQ(counted(16, "micro-batch", "micro-batches"), "16 micro-batches");
  EXPECT_EQ(counted(3, "process", "processes"), "3 processes");
}

TEST(FormatQuantity, ThreeSignificantDigits) {
  EXPECT_EQ(format_bytes(1.5 * kGiB), "1.50 GiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_duration(4.2e-3), "4.20 ms");
  EXPECT_EQ(format_duration(0.25), "250 ms");
  EXPECT_EQ(format_duration(12.0), "12.0 s");
  EXPECT_EQ(format_flop_rate(312e12), "312 TFLOP/s");
  EXPECT_EQ(format_count(6.74e9), "6.74 B");
  EXPECT_EQ(format_count(768), "768");
  EXPECT_EQ(format_bandwidth(12.5e9), "12.5 GB/s");
}

}  // namespace
}  // namespace hyperpipe
