// A timeline as a self-contained SVG Gantt chart: one row per track, F/B/W bars coloured
// and numbered with their micro-batch, sends on a thin lane under each row, idle time
// hatched as bubble, a time axis and a legend.
#pragma once

#include <string>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::trace {

struct SvgOptions {
  double width = 1200;  // pixels
};

std::string svg_gantt(const Timeline& timeline, const SvgOptions& options = {});

}  // namespace hyperpipe::trace
