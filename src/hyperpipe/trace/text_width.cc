#include "hyperpipe/trace/text_width.h"

#include <array>
#include <cstdint>

namespace hyperpipe::trace {
namespace {

constexpr double kUnitsPerEm = 1000;
constexpr char32_t kFirstPrintable = 0x20;  // space
constexpr char32_t kLastPrintable = 0x7e;   // tilde
constexpr double kUnknownWidth = 1000;      // a whole em: wider than any glyph we draw

// Advance widths of U+0020–U+007E in 1/1000 em. Regular: the larger of Helvetica's
// (Adobe's Helvetica.afm, the core-14 metrics Arial shares) and DejaVu Sans 2.37's
// (its hmtx table, Debian's fonts-dejavu-core). Bold: DejaVu Sans Bold's, the wider.
constexpr std::array<uint16_t, 95> kRegular{
    318,  401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337,  // U+0020
    636,  636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 556,  // U+0030
    1015, 684, 686, 722, 770, 667, 611, 778, 752, 295, 500, 667, 557, 863, 748, 787,  // U+0040
    667,  787, 722, 667, 611, 732, 684, 989, 685, 667, 685, 390, 337, 390, 838, 556,  // U+0050
    500,  613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,  // U+0060
    635,  635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,       // U+0070
};
constexpr std::array<uint16_t, 95> kBold{
    348,  456, 521, 838, 696, 1002, 872, 306,  457, 457, 523, 838, 380, 415,  380, 365,  // U+0020
    696,  696, 696, 696, 696, 696,  696, 696,  696, 696, 400, 400, 838, 838,  838, 580,  // U+0030
    1000, 774, 762, 734, 830, 683,  683, 821,  837, 372, 372, 775, 637, 995,  837, 850,  // U+0040
    733,  850, 770, 720, 682, 812,  774, 1103, 771, 724, 725, 457, 365, 457,  838, 500,  // U+0050
    500,  675, 716, 593, 716, 678,  435, 716,  712, 343, 343, 665, 343, 1042, 712, 687,  // U+0060
    716,  716, 493, 595, 478, 712,  652, 924,  645, 652, 582, 712, 365, 712,  838,       // U+0070
};

struct Glyph {
  char32_t code;
  uint16_t regular;
  uint16_t bold;
};
// The few other characters our labels use (DejaVu Sans's widths, the wider).
constexpr std::array<Glyph, 6> kOthers{{{0x00b7, 318, 380},    // · middle dot
                                        {0x00d7, 838, 838},    // × multiplication sign
                                        {0x2013, 500, 500},    // – en dash
                                        {0x2192, 838, 838},    // → rightwards arrow
                                        {0x2026, 1000, 1000},  // … ellipsis
                                        {0x00b5, 636, 736}}};  // µ micro sign

double units(char32_t code, FontWeight weight) {
  if (code >= kFirstPrintable && code <= kLastPrintable) {
    const auto& table = weight == FontWeight::bold ? kBold : kRegular;
    return table[code - kFirstPrintable];
  }
  for (const auto& glyph : kOthers) {
    if (glyph.code == code) return weight == FontWeight::bold ? glyph.bold : glyph.regular;
  }
  return kUnknownWidth;
}

}  // namespace

double text_width(std::string_view text, double font_size, FontWeight weight) {
  double total = 0;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    // UTF-8: the lead byte says how many continuation bytes follow.
    const size_t length = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    char32_t code = length == 1 ? lead : lead & (0x3f >> (length - 1));
    for (size_t k = 1; k < length && i + k < text.size(); ++k) {
      code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
    }
    total += units(code, weight);
    i += length;
  }
  return total / kUnitsPerEm * font_size;
}

}  // namespace hyperpipe::trace
