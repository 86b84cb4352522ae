// How wide a line of text is drawn, for laying out SVG charts without a renderer: the
// advance widths of the fonts a chart names (Helvetica, Arial) and of the one Debian's
// fontconfig puts in their place (DejaVu Sans), the wider of them, so that a layout
// made from it leaves room whichever of them draws it.
#pragma once

#include <string_view>

namespace hyperpipe::trace {

enum class FontWeight { regular, bold };

// The advance width of `text` (UTF-8) in pixels at `font_size` pixels per em.
double text_width(std::string_view text, double font_size, FontWeight weight = FontWeight::regular);

}  // namespace hyperpipe::trace
