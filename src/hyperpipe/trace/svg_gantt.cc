#include "hyperpipe/trace/svg_gantt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/trace/text_width.h"

namespace hyperpipe::trace {
namespace {

// Layout, in pixels.
constexpr double kMargin = 12;
constexpr double kMinRightMargin = 24;
constexpr double kLabelGap = 8;        // between a row's label and its bars
constexpr double kMinLabelWidth = 80;  // the label column, at least
constexpr double kTitleFont = 16;
constexpr double kTitleBaseline = 24;
constexpr double kSubtitleFont = 12;
constexpr double kSubtitleBaseline = 44;
constexpr double kLegendTop = 56;
constexpr double kLegendFont = 11;
constexpr double kLegendRowHeight = 18;
constexpr double kSwatch = 12;
constexpr double kSwatchGap = 4;   // swatch to its text
constexpr double kLegendGap = 18;  // one legend item to the next
constexpr double kHeadingFont = 13;
constexpr double kHeadingHeight = 28;
constexpr double kLabelFont = 12;
constexpr double kBarHeight = 24;
constexpr double kCommLaneHeight = 7;
constexpr double kRowGap = 12;
constexpr double kBarNumberFont = 10;
constexpr double kBarNumberPadding = 3;
constexpr double kTickFont = 11;
constexpr double kAxisHeight = 44;
constexpr int kTargetTicks = 10;
constexpr double kTickGap = 16;  // at least, between two tick labels
// Chunks 1, 3, … of interleaved stages: their colour under white dots, told apart from
// chunks 0, 2, … and from the idle hatch in greyscale too.
constexpr const char* kOddChunkPattern = "url(#odd-chunk)";
// The most op names the legend's "other" entry lists before "…".
constexpr size_t kOtherNamesListed = 3;

struct Style {
  const char* op;
  const char* colour;
  const char* label;
};

// In legend order. Colours from the Tableau 10 palette: readable, and distinct for
// colour-blind readers.
constexpr Style kStyles[] = {
    {"F", "#4e79a7", "F forward"},
    {"B", "#e15759", "B backward (input)"},
    {"W", "#59a14f", "W backward (weights)"},
    {"BW", "#f28e2b", "BW backward"},
    {"send F", "#76b7b2", "send activation"},
    {"send B", "#ff9da7", "send gradient"},
    {"allreduce", "#b07aa1", "gradient all-reduce"},
    {"replica sync", "#edc948", "sum across pipelines"},
    {"tied embedding", "#8cd17d", "tied embedding sum"},
    {"global norm", "#d37295", "global norm"},
    {"optimizer", "#9c755f", "optimizer"},
};
constexpr Style kOther{"", "#bab0ac", "other"};
// Waiting for a peer: a receive's data ("wait RF", "wait RB", "wait sends"), or a
// collective of every rank until the last of them arrives (the rest of its bar).
constexpr Style kWaiting{"wait", "#7f7f7f",
                         "waiting for peers (a receive, a collective until all arrive)"};
// Collectives whose members a timeline tells apart: the global norm joins every rank; the
// tied embedding's sum the first and last stages of one pipeline (each of a plan's
// pipelines side by side sums its own); a gradient all-reduce the data-parallel ranks of
// one device group. (A tied-embedding sum or an all-reduce forms one group per tp shard,
// but the tp sums inside every layer keep the shards in step, so one arrival stands for
// them.) On a timeline whose tracks share a clock (the simulator's; a run's, whose
// processes start each step together after the step boundary's all-reduce), such a
// collective cannot run before its last member arrives. A track's scope for the op:
// (pipeline, group), kEveryRank standing for any; nullopt for any other op. The sum across
// pipelines joins ranks of several groups that the timeline does not pair: drawn whole.
constexpr int kEveryRank = -1;
using Scope = std::pair<int, int>;
std::optional<Scope> collective_scope(const std::string& op, const Track& track) {
  if (op == "global norm") return Scope{kEveryRank, kEveryRank};
  if (op == "tied embedding") return Scope{track.pipeline, kEveryRank};
  if (op == "allreduce") return Scope{track.pipeline, track.group};
  return std::nullopt;
}

bool is_wait(const std::string& op) {
  return op.rfind("wait", 0) == 0;
}

// When each occurrence of such a collective could begin: the latest start of its k-th
// interval over its members' tracks, by op, scope and k.
using Arrivals = std::map<std::tuple<std::string, Scope, size_t>, double>;
Arrivals last_arrivals(const Timeline& timeline) {
  Arrivals latest;
  for (const auto& track : timeline.tracks) {
    std::map<std::string, size_t> seen;
    for (const auto& i : track.communication) {
      const auto scope = collective_scope(i.op, track);
      if (!scope) continue;
      const auto key = std::tuple{i.op, *scope, seen[i.op]++};
      const auto found = latest.find(key);
      latest[key] = found == latest.end() ? i.start : std::max(found->second, i.start);
    }
  }
  return latest;
}

const Style& style_of(const std::string& op) {
  for (const auto& style : kStyles) {
    if (op == style.op) return style;
  }
  return kOther;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// A round step (1, 2 or 5 times a power of ten) giving about `target` ticks.
double tick_step(double span, int target) {
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return factor * power;
  }
  return 10.0 * power;
}

struct Tick {
  double time;
  std::string label;
};

std::vector<Tick> ticks_to(double end, int target) {
  const double step = tick_step(end, target);
  // Ticks counted, not summed: adding `step` to a double drifts (cert-flp30-c).
  const auto count = static_cast<int64_t>(std::floor(end * (1 + 1e-9) / step));
  std::vector<Tick> ticks;
  for (int64_t i = 0; i <= count; ++i) {
    const double time = static_cast<double>(i) * step;
    ticks.push_back({time, time == 0 ? "0" : format_duration(time)});
  }
  return ticks;
}

struct LegendItem {
  std::string fill;     // a colour, or the bubble's pattern
  std::string overlay;  // a pattern drawn over the fill (odd chunks' dots), or none
  std::string label;
};

// Every colour the chart draws, in legend order.
std::vector<LegendItem> legend_of(const std::vector<SvgSection>& sections) {
  std::set<std::string> present;
  std::set<std::string> others;  // the ops drawn in "other"'s colour
  bool waiting = false;
  bool odd_chunks = false;
  std::string first_compute_colour;
  for (const auto& section : sections) {
    for (const auto& track : section.timeline->tracks) {
      for (const auto* intervals : {&track.compute, &track.communication}) {
        for (const auto& i : *intervals) {
          present.insert(i.op);
          waiting = waiting || is_wait(i.op) || collective_scope(i.op, track).has_value();
          if (&style_of(i.op) == &kOther && !is_wait(i.op)) others.insert(i.op);
        }
      }
      for (const auto& i : track.compute) {
        if (i.chunk % 2 == 1) {
          odd_chunks = true;
          if (first_compute_colour.empty()) first_compute_colour = style_of(i.op).colour;
        }
      }
    }
  }
  std::vector<LegendItem> items;
  for (const auto& style : kStyles) {
    if (present.count(style.op)) items.push_back({style.colour, "", style.label});
  }
  if (!others.empty()) {
    // Named, so that the entry says what it stands for.
    std::vector<std::string> names(others.begin(), others.end());
    if (names.size() > kOtherNamesListed) {
      names.resize(kOtherNamesListed);
      names.emplace_back("…");
    }
    items.push_back({kOther.colour, "", fmt::format("other: {}", fmt::join(names, ", "))});
  }
  if (waiting) items.push_back({kWaiting.colour, "", kWaiting.label});
  if (odd_chunks) {
    items.push_back(
        {first_compute_colour, kOddChunkPattern, "dotted: chunks 1, 3, … (interleaved)"});
  }
  items.push_back({"url(#bubble)", "", "idle (bubble)"});
  return items;
}

double legend_item_width(const LegendItem& item) {
  return kSwatch + kSwatchGap + text_width(item.label, kLegendFont);
}

// Rows of legend items that fit in `width`; the rows' item indices.
std::vector<std::vector<size_t>> legend_rows(const std::vector<LegendItem>& items, double width) {
  std::vector<std::vector<size_t>> rows(1);
  double x = kMargin;
  for (size_t i = 0; i < items.size(); ++i) {
    const double w = legend_item_width(items[i]);
    if (!rows.back().empty() && x + w > width - kMargin) {
      rows.emplace_back();
      x = kMargin;
    }
    rows.back().push_back(i);
    x += w + kLegendGap;
  }
  return rows;
}

// One row: its label, the idle hatch up to `idle_until` (its timeline's end: nothing is
// drawn past an iteration), its ops and its sends.
void draw_track(std::string& svg, const Track& track, double top, double label_right,
                double plot_left, double idle_until, const Arrivals& arrivals, const auto& x) {
  svg += fmt::format(
      "<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" "
      "text-anchor=\"end\">{}</text>\n",
      label_right, top + kBarHeight / 2 + 4, kLabelFont, escape(track.name));
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"url(#bubble)\"/>\n",
      plot_left, top, idle_until - plot_left, kBarHeight);
  for (const auto& i : track.compute) {
    const double left = x(i.start);
    const double width = std::max(x(i.end) - left, 0.5);
    const Style& style = style_of(i.op);
    svg += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"0.5\"><title>{}{} stage {} "
        "chunk {}: {} – {}</title></rect>\n",
        left, top, width, kBarHeight, style.colour, escape(i.op),
        i.micro_batch >= 0 ? std::to_string(i.micro_batch) : "", i.stage, i.chunk,
        escape(format_duration(i.start)), escape(format_duration(i.end)));
    if (i.chunk % 2 == 1) {
      svg += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"/>\n",
          left, top, width, kBarHeight, kOddChunkPattern);
    }
    const std::string number = std::to_string(i.micro_batch);
    if (i.micro_batch >= 0 && width >= text_width(number, kBarNumberFont) + 2 * kBarNumberPadding) {
      svg += fmt::format(
          "<text class=\"bar-number\" x=\"{:.2f}\" y=\"{:.1f}\" font-size=\"{}\" fill=\"white\" "
          "text-anchor=\"middle\">{}</text>\n",
          left + width / 2, top + kBarHeight / 2 + 3.5, kBarNumberFont, number);
    }
  }
  const auto lane = [&](double start, double end, const char* colour, const std::string& what) {
    const double left = x(start);
    const double width = std::max(x(end) - left, 0.5);
    svg += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\">"
        "<title>{}: {} – {}</title></rect>\n",
        left, top + kBarHeight + 1, width, kCommLaneHeight - 2, colour, escape(what),
        escape(format_duration(start)), escape(format_duration(end)));
  };
  std::map<std::string, size_t> seen;
  for (const auto& i : track.communication) {
    const std::string what = fmt::format("{} {} stage {}", i.op, i.micro_batch, i.stage);
    if (is_wait(i.op)) {
      lane(i.start, i.end, kWaiting.colour, what);
      continue;
    }
    double begins = i.start;  // the op itself, after any wait for the last rank
    if (const auto scope = collective_scope(i.op, track)) {
      const auto arrived = arrivals.find({i.op, *scope, seen[i.op]++});
      if (arrived != arrivals.end()) begins = std::clamp(arrived->second, i.start, i.end);
    }
    if (begins > i.start) lane(i.start, begins, kWaiting.colour, "waiting for its peers: " + what);
    lane(begins, i.end, style_of(i.op).colour, what);
  }
}

}  // namespace

std::string svg_gantt(const Timeline& timeline, const SvgOptions& options) {
  return svg_gantt(timeline.title, "iteration " + format_duration(timeline.end_time()),
                   {{"", &timeline}}, options);
}

std::string svg_gantt(const std::string& title, const std::string& subtitle,
                      const std::vector<SvgSection>& sections, const SvgOptions& options) {
  double end = 1e-12;
  double label_width = kMinLabelWidth;
  size_t busiest = 0;  // compute ops of the busiest row
  size_t rows = 0;
  double headings_width = 0;
  for (const auto& section : sections) {
    end = std::max(end, section.timeline->end_time());
    headings_width =
        std::max(headings_width, text_width(section.heading, kHeadingFont, FontWeight::bold));
    for (const auto& track : section.timeline->tracks) {
      label_width = std::max(label_width, text_width(track.name, kLabelFont));
      busiest = std::max(busiest, track.compute.size());
      ++rows;
    }
  }
  const auto widest_label = [](const std::vector<Tick>& ticks) {
    double widest = 0;
    for (const auto& tick : ticks) widest = std::max(widest, text_width(tick.label, kTickFont));
    return widest;
  };
  std::vector<Tick> ticks = ticks_to(end, kTargetTicks);
  const double widest_tick = widest_label(ticks);
  const std::vector<LegendItem> legend = legend_of(sections);
  double widest_legend_item = 0;
  for (const auto& item : legend) {
    widest_legend_item = std::max(widest_legend_item, legend_item_width(item));
  }

  // Left to right: margin, labels, gap, plot, right margin (room for the last tick's
  // centred label). The canvas is at least as wide as the title, subtitle and any legend
  // item need.
  const double plot_left = kMargin + label_width + kLabelGap;
  const double right_margin = std::max(kMinRightMargin, widest_tick / 2 + kMargin / 2);
  const double width = std::max(
      {options.width, plot_left + static_cast<double>(busiest) * kMinPixelsPerOp + right_margin,
       2 * kMargin + text_width(title, kTitleFont, FontWeight::bold),
       2 * kMargin + text_width(subtitle, kSubtitleFont), 2 * kMargin + widest_legend_item,
       plot_left + 2 * kMargin + headings_width});
  const double plot_width = width - plot_left - right_margin;
  const auto x = [&](double t) { return plot_left + t / end * plot_width; };
  // Fewer ticks where their labels would touch.
  for (int target = kTargetTicks; target > 1 && ticks.size() > 1 &&
                                  x(ticks[1].time) - x(0) < widest_label(ticks) + kTickGap;) {
    target = std::max(1, target / 2);
    ticks = ticks_to(end, target);
  }

  const auto rows_of_legend = legend_rows(legend, width);
  const double legend_bottom =
      kLegendTop + kLegendRowHeight * static_cast<double>(rows_of_legend.size());
  const double row_height = kBarHeight + kCommLaneHeight + kRowGap;
  double headings_height = 0;
  for (const auto& section : sections)
    headings_height += section.heading.empty() ? 0 : kHeadingHeight;
  const double body_top = legend_bottom + kRowGap;
  const double axis_y = body_top + headings_height + row_height * static_cast<double>(rows);
  const double height = axis_y + kAxisHeight;

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
      width, height);
  svg +=
      "<defs><pattern id=\"bubble\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f4f4f4\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d0d0d0\" stroke-width=\"2\"/>"
      "</pattern><pattern id=\"odd-chunk\" width=\"5\" height=\"5\" "
      "patternUnits=\"userSpaceOnUse\"><circle cx=\"2.5\" cy=\"2.5\" r=\"1.2\" "
      "fill=\"white\"/></pattern></defs>\n";
  svg += fmt::format("<rect width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\"/>\n", width, height);
  svg += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\">{}</text>\n"
      "<text class=\"subtitle\" x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#555\">{}</text>\n",
      kMargin, kTitleBaseline, kTitleFont, escape(title), kMargin, kSubtitleBaseline, kSubtitleFont,
      escape(subtitle));

  for (size_t r = 0; r < rows_of_legend.size(); ++r) {
    const double top = kLegendTop + kLegendRowHeight * static_cast<double>(r);
    double left = kMargin;
    for (size_t i : rows_of_legend[r]) {
      const LegendItem& item = legend[i];
      const std::string overlay =
          item.overlay.empty()
              ? ""
              : fmt::format(
                    "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                    left, top, kSwatch, kSwatch, item.overlay);
      svg += fmt::format(
          "<g class=\"legend\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" "
          "fill=\"{}\" stroke=\"#999\" stroke-width=\"0.5\"/>{}"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\">{}</text></g>\n",
          left, top, kSwatch, kSwatch, item.fill, overlay, left + kSwatch + kSwatchGap,
          top + kSwatch - 2, kLegendFont, escape(item.label));
      left += legend_item_width(item) + kLegendGap;
    }
  }

  double top = body_top;
  for (size_t s = 0; s < sections.size(); ++s) {
    const SvgSection& section = sections[s];
    if (!section.heading.empty()) {
      if (s > 0) {
        svg += fmt::format(
            "<line class=\"divider\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
            "stroke=\"#333\" stroke-dasharray=\"4 3\"/>\n",
            kMargin, top - kRowGap / 2, width - kMargin, top - kRowGap / 2);
      }
      svg += fmt::format(
          "<text class=\"heading\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" "
          "font-weight=\"bold\">{}</text>\n",
          plot_left, top + kHeadingFont + 4, kHeadingFont, escape(section.heading));
      top += kHeadingHeight;
    }
    const double section_end = x(section.timeline->end_time());
    const Arrivals arrivals = last_arrivals(*section.timeline);
    for (const auto& track : section.timeline->tracks) {
      draw_track(svg, track, top, plot_left - kLabelGap, plot_left, section_end, arrivals, x);
      top += row_height;
    }
  }

  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x(0),
      axis_y, x(end), axis_y);
  for (const auto& tick : ticks) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"{5}\" "
        "text-anchor=\"middle\">{4}</text>\n",
        x(tick.time), axis_y, axis_y + 5, axis_y + 18, escape(tick.label), kTickFont);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace hyperpipe::trace
