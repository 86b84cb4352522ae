// A timeline as a self-contained SVG Gantt chart: one row per track, F/B/W bars coloured
// and numbered with their micro-batch (an interleaved stage's odd chunks dotted), sends on
// a thin lane under each row, waits grey (a receive's; a collective of every rank until its
// last rank arrives, then the op's own colour), idle time hatched as bubble up to the
// timeline's end (nothing past it), a time axis and a legend of every colour drawn, "other"
// naming its ops. The layout is
// worked out from the text (trace/text_width.h): the label column fits the longest row label, the
// legend wraps inside the canvas, and the chart widens with the ops of the busiest row so that long
// runs keep every bar visible.
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::trace {

struct SvgOptions {
  double width = 1200;  // pixels, at least: wider where labels or ops need it
};

// Rows drawn under a heading, after a divider (compare: predicted above measured).
struct SvgSection {
  std::string heading;  // empty: no heading, no divider
  const Timeline* timeline = nullptr;
};

// One timeline, titled with its own title and iteration time.
std::string svg_gantt(const Timeline& timeline, const SvgOptions& options = {});

// Several timelines on one time axis, one section each.
std::string svg_gantt(const std::string& title, const std::string& subtitle,
                      const std::vector<SvgSection>& sections, const SvgOptions& options = {});

// The fewest pixels an op gets in the busiest row before the chart widens.
inline constexpr double kMinPixelsPerOp = 5;

}  // namespace hyperpipe::trace
