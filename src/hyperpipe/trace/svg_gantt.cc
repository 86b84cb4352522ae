#include "hyperpipe/trace/svg_gantt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::trace {
namespace {

// Layout, in pixels.
constexpr double kLabelWidth = 260;
constexpr double kRightMargin = 24;
constexpr double kTitleHeight = 56;
constexpr double kBarHeight = 24;
constexpr double kCommLaneHeight = 7;
constexpr double kRowGap = 12;
constexpr double kAxisHeight = 44;
constexpr double kMinLabelledBarWidth = 13;  // narrower bars carry no number
constexpr int kTargetTicks = 10;

struct Style {
  const char* colour;
  const char* label;
};

// Colours from the Tableau 10 palette: readable, and distinct for colour-blind readers.
const std::map<std::string, Style>& styles() {
  static const std::map<std::string, Style> table{
      {"F", {"#4e79a7", "F forward"}},
      {"B", {"#e15759", "B backward (input)"}},
      {"W", {"#59a14f", "W backward (weights)"}},
      {"BW", {"#f28e2b", "BW backward"}},
      {"optimizer", {"#9c755f", "optimizer"}},
      {"allreduce", {"#b07aa1", "gradient all-reduce"}},
      {"replica sync", {"#edc948", "sum across pipelines"}},
      {"tied embedding", {"#8cd17d", "tied embedding sum"}},
      {"global norm", {"#d37295", "global norm"}},
      {"send F", {"#76b7b2", "send activation"}},
      {"send B", {"#ff9da7", "send gradient"}},
  };
  return table;
}

const Style& style_of(const std::string& op) {
  static const Style other{"#bab0ac", "other"};
  const auto it = styles().find(op);
  return it == styles().end() ? other : it->second;
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

// A round step (1, 2 or 5 times a power of ten) giving about kTargetTicks ticks.
double tick_step(double span) {
  const double raw = span / kTargetTicks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return factor * power;
  }
  return 10.0 * power;
}

}  // namespace

std::string svg_gantt(const Timeline& timeline, const SvgOptions& options) {
  const double end = std::max(timeline.end_time(), 1e-12);
  const double plot_width = options.width - kLabelWidth - kRightMargin;
  const double row_height = kBarHeight + kCommLaneHeight + kRowGap;
  const double height =
      kTitleHeight + row_height * static_cast<double>(timeline.tracks.size()) + kAxisHeight;
  const auto x = [&](double t) { return kLabelWidth + t / end * plot_width; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
      options.width, height);
  svg +=
      "<defs><pattern id=\"bubble\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f4f4f4\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d0d0d0\" stroke-width=\"2\"/>"
      "</pattern></defs>\n";
  svg += fmt::format("<rect width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\"/>\n", options.width,
                     height);
  svg += fmt::format(
      "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"12\" y=\"44\" font-size=\"12\" fill=\"#555\">iteration {} · hatched: idle "
      "(bubble)</text>\n",
      escape(timeline.title), escape(format_duration(timeline.end_time())));

  // Legend: the ops this timeline has, right-aligned in the title band.
  std::set<std::string> present;
  for (const auto& track : timeline.tracks) {
    for (const auto& i : track.compute) present.insert(i.op);
    for (const auto& i : track.communication) present.insert(i.op);
  }
  double legend_x = options.width - kRightMargin;
  for (auto it = styles().rbegin(); it != styles().rend(); ++it) {
    if (!present.count(it->first)) continue;
    const double text_width = 6.5 * static_cast<double>(std::string(it->second.label).size());
    legend_x -= text_width + 22;
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"30\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"40\" font-size=\"11\">{}</text>\n",
        legend_x, it->second.colour, legend_x + 16, escape(it->second.label));
  }

  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const Track& track = timeline.tracks[t];
    const double top = kTitleHeight + row_height * static_cast<double>(t);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n",
        kLabelWidth - 8, top + kBarHeight / 2 + 4, escape(track.name));
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
        "fill=\"url(#bubble)\"/>\n",
        x(0), top, plot_width, kBarHeight);
    for (const auto& i : track.compute) {
      const double left = x(i.start);
      const double width = std::max(x(i.end) - left, 0.5);
      const Style& style = style_of(i.op);
      svg += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
          "fill-opacity=\"{}\" stroke=\"white\" stroke-width=\"0.5\"><title>{}{} stage {} "
          "chunk {}: {} – {}</title></rect>\n",
          left, top, width, kBarHeight, style.colour, i.chunk % 2 == 1 ? "0.7" : "1", escape(i.op),
          i.micro_batch >= 0 ? std::to_string(i.micro_batch) : "", i.stage, i.chunk,
          escape(format_duration(i.start)), escape(format_duration(i.end)));
      if (i.micro_batch >= 0 && width >= kMinLabelledBarWidth) {
        svg += fmt::format(
            "<text x=\"{:.2f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"white\" "
            "text-anchor=\"middle\">{}</text>\n",
            left + width / 2, top + kBarHeight / 2 + 3.5, i.micro_batch);
      }
    }
    for (const auto& i : track.communication) {
      const double left = x(i.start);
      const double width = std::max(x(i.end) - left, 0.5);
      svg += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\">"
          "<title>{} {} stage {}: {} – {}</title></rect>\n",
          left, top + kBarHeight + 1, width, kCommLaneHeight - 2, style_of(i.op).colour,
          escape(i.op), i.micro_batch, i.stage, escape(format_duration(i.start)),
          escape(format_duration(i.end)));
    }
  }

  const double axis_y = kTitleHeight + row_height * static_cast<double>(timeline.tracks.size());
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x(0),
      axis_y, x(end), axis_y);
  const double step = tick_step(end);
  // Ticks counted, not summed: adding `step` to a double drifts (cert-flp30-c).
  const auto ticks = static_cast<int64_t>(std::floor(end * (1 + 1e-9) / step));
  for (int64_t i = 0; i <= ticks; ++i) {
    const double tick = static_cast<double>(i) * step;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"11\" text-anchor=\"middle\">{4}</text>\n",
        x(tick), axis_y, axis_y + 5, axis_y + 18, tick == 0 ? "0" : escape(format_duration(tick)));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace hyperpipe::trace
