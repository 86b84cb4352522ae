// The charts as a person sees them: each SVG is rendered to PNG by rsvg-convert (Debian's
// librsvg2-bin, in the font fontconfig picks for Helvetica) and its pixels are checked.
// Every text element is rendered alone, so its ink can be measured: no text runs off
// the canvas, labels stay left of the bars, legend items and titles do not overlap.
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "hyperpipe/trace/svg_gantt.h"
#include "hyperpipe/trace/text_width.h"
#include "test_files.h"

namespace hyperpipe::trace {
namespace {

// Brighter than this in every channel is background.
constexpr int kInkThreshold = 200;

struct Box {
  int left = 0, top = 0, right = -1, bottom = -1;  // inclusive; empty when right < left
  bool empty() const { return right < left; }
  bool overlaps(const Box& other) const {
    return !empty() && !other.empty() && left <= other.right && other.left <= right &&
           top <= other.bottom && other.top <= bottom;
  }
};

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  // The box around every pixel darker than the background.
  Box ink() const {
    Box box{width, height, -1, -1};
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const uint8_t* p = &rgb[3 * (static_cast<size_t>(y) * width + x)];
        if (p[0] < kInkThreshold || p[1] < kInkThreshold || p[2] < kInkThreshold) {
          box = {std::min(box.left, x), std::min(box.top, y), std::max(box.right, x),
                 std::max(box.bottom, y)};
        }
      }
    }
    return box;
  }
};

Image render(const std::string& svg) {
  static int count = 0;
  const std::string name = "render-" + std::to_string(count++);
  const std::string svg_path = testing::write_temp_file(name + ".svg", svg);
  const std::string png_path = testing::temp_path(name + ".png");
  const std::string command = "rsvg-convert -o " + png_path + " " + svg_path;
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << "`" << command << "` failed: install librsvg2-bin (scripts/install-deps.sh)";
    return {};
  }
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, png_path.c_str())) {
    ADD_FAILURE() << png_path << ": " << png.message;
    return {};
  }
  png.format = PNG_FORMAT_RGB;
  Image image{static_cast<int>(png.width), static_cast<int>(png.height), {}};
  image.rgb.resize(PNG_IMAGE_SIZE(png));
  // Transparent pixels composite onto white, as a viewer shows them.
  const png_color white{255, 255, 255};
  png.flags = 0;
  if (!png_image_finish_read(&png, &white, image.rgb.data(), 0, nullptr)) {
    ADD_FAILURE() << png_path << ": " << png.message;
  }
  return image;
}

// The chart's lines: each element the writer draws is one line.
std::vector<std::string> lines_of(const std::string& svg) {
  std::vector<std::string> lines;
  std::istringstream in(svg);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Room around the canvas where an element alone is drawn, so that ink the chart's own
// canvas would cut off shows up outside it.
constexpr int kBorder = 200;

// `element` alone, on a canvas grown by kBorder on every side (with the chart's font and
// patterns), shifted so that the chart's origin is at (kBorder, kBorder).
std::string alone(const std::vector<std::string>& lines, const std::string& element, double width,
                  double height) {
  std::smatch font;
  std::regex_search(lines[0], font, std::regex("font-family=\"[^\"]*\""));
  const std::string size = "width=\"" + std::to_string(width + 2 * kBorder) + "\" height=\"" +
                           std::to_string(height + 2 * kBorder) + "\"";
  // Line 1 holds the patterns.
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" " + size + " " + font.str() + ">\n" + lines[1] +
         "\n<rect " + size + " fill=\"white\"/>\n<g transform=\"translate(" +
         std::to_string(kBorder) + "," + std::to_string(kBorder) + ")\">" + element +
         "</g></svg>\n";
}

struct Element {
  std::string kind;  // its class
  std::string text;  // the line, for messages
  Box ink;
};

// The ink of every text element (and legend item), each rendered alone.
std::vector<Element> text_elements(const std::string& svg, double width, double height) {
  const auto lines = lines_of(svg);
  const std::regex kind("^<(?:text|g) class=\"([a-z-]+)\"");
  std::vector<Element> found;
  for (const auto& line : lines) {
    std::smatch match;
    if (!std::regex_search(line, match, kind) || match[1] == "bar-number") continue;
    Box ink = render(alone(lines, line, width, height)).ink();
    if (!ink.empty()) {  // back in the chart's own coordinates
      ink = {ink.left - kBorder, ink.top - kBorder, ink.right - kBorder, ink.bottom - kBorder};
    }
    found.push_back({match[1], line, ink});
  }
  return found;
}

double attribute(const std::string& svg, const std::string& pattern) {
  std::smatch match;
  EXPECT_TRUE(std::regex_search(svg, match, std::regex(pattern))) << pattern;
  return match.empty() ? 0 : std::stod(match[1]);
}

// A long run on a mixed cluster, with long row labels and every kind of op.
Timeline long_run() {
  Timeline timeline;
  timeline.title = "llama2-70b on h100-a100-v100-islands: step 12 (measured), a long title";
  const std::vector<std::string> names = {
      "pipeline 1, stage 3: NVIDIA GeForce RTX 4090 ×8 [120-127] · rank 127", "stage 0: WWWW",
      "stage 1: A100-80GB ×4 [4-7]", "i"};
  const std::vector<std::string> kinds = {"F", "B", "W", "BW", "mystery"};
  for (size_t t = 0; t < names.size(); ++t) {
    Track track{names[t], {static_cast<int>(t)}, {}, {}, {}, {}};
    double time = 0.001 * static_cast<double>(t);
    constexpr int kMicroBatches = 64, kChunks = 4;
    for (int m = 0; m < kMicroBatches; ++m) {
      for (int c = 0; c < kChunks; ++c) {
        for (const char* op : {"F", "BW"}) {
          track.compute.push_back({op, static_cast<int>(t), m, c, time, time + 0.01});
          time += 0.0105;
        }
      }
    }
    track.compute.push_back(
        {kinds[t % kinds.size()], static_cast<int>(t), 0, 1, time, time + 0.01});
    for (const char* op : {"allreduce", "replica sync", "tied embedding", "global norm"}) {
      track.communication.push_back({op, -1, -1, 0, time, time + 0.002});
    }
    track.communication.push_back({"send F", static_cast<int>(t), 0, 0, 0.01, 0.011});
    track.communication.push_back({"send B", static_cast<int>(t), 0, 0, 0.02, 0.021});
    track.compute.push_back({"optimizer", -1, -1, 0, time + 0.01, time + 0.02});
    track.compute.push_back({"mystery", -1, -1, 0, time + 0.02, time + 0.03});
    timeline.tracks.push_back(std::move(track));
  }
  return timeline;
}

void expect_readable(const std::string& svg) {
  const double width = attribute(svg, "<svg [^>]*width=\"([0-9.]+)\"");
  const double height = attribute(svg, "<svg [^>]*height=\"([0-9.]+)\"");
  const double plot_left = attribute(svg, "<rect x=\"([0-9.]+)\"[^>]*fill=\"url\\(#bubble\\)\"/>");
  const auto elements = text_elements(svg, width, height);
  ASSERT_GE(elements.size(), 6u);  // title, subtitle, a legend item, a label, two ticks
  std::vector<const Element*> legend, titles, ticks;
  for (const auto& e : elements) {
    ASSERT_FALSE(e.ink.empty()) << "nothing drawn: " << e.text;
    // Inside the canvas with a clear pixel around: nothing cut at an edge.
    EXPECT_GE(e.ink.left, 1) << e.text;
    EXPECT_GE(e.ink.top, 1) << e.text;
    EXPECT_LE(e.ink.right, width - 2) << e.text;
    EXPECT_LE(e.ink.bottom, height - 2) << e.text;
    if (e.kind == "label") {
      EXPECT_LT(e.ink.right, plot_left) << e.text;
    }
    if (e.kind == "legend") legend.push_back(&e);
    if (e.kind == "tick") ticks.push_back(&e);
    if (e.kind == "title" || e.kind == "subtitle") titles.push_back(&e);
  }
  EXPECT_EQ(titles.size(), 2u);
  EXPECT_GE(ticks.size(), 2u);
  for (size_t i = 0; i + 1 < ticks.size(); ++i) {
    EXPECT_FALSE(ticks[i]->ink.overlaps(ticks[i + 1]->ink)) << ticks[i]->text;
  }
  for (size_t i = 0; i < legend.size(); ++i) {
    for (const auto* title : titles) {
      EXPECT_FALSE(legend[i]->ink.overlaps(title->ink)) << legend[i]->text << title->text;
    }
    for (size_t j = i + 1; j < legend.size(); ++j) {
      EXPECT_FALSE(legend[i]->ink.overlaps(legend[j]->ink)) << legend[i]->text << "\n"
                                                            << legend[j]->text;
    }
  }
}

TEST(SvgRender, LabelsTitlesAndLegendStayOnTheCanvasApartFromEachOther) {
  // Narrow, so the legend wraps and the title widens the canvas.
  const std::string svg = svg_gantt(long_run(), {400});
  expect_readable(svg);
  // Every colour is in the legend: the op kinds, "other", odd chunks, idle.
  for (const char* label :
       {"F forward", "BW backward", "gradient all-reduce", "send activation", "send gradient",
        "sum across pipelines", "tied embedding sum", "global norm", "optimizer", "other: mystery",
        "dotted: chunks 1, 3, … (interleaved)", "idle (bubble)"}) {
    EXPECT_NE(svg.find(std::string(">") + label + "</text>"), std::string::npos) << label;
  }
}

TEST(SvgRender, ANarrowChartOfFewOpsKeepsItsTicksApart) {
  Timeline timeline;
  timeline.title = "t";
  Track track{"stage 0", {0}, {}, {}, {}, {}};
  track.compute = {{"F", 0, 0, 0, 0.0, 0.0617}, {"BW", 0, 0, 0, 0.0617, 0.1234567}};
  timeline.tracks = {track};
  expect_readable(svg_gantt(timeline, {300}));
}

TEST(SvgRender, PredictedAndMeasuredSectionsAreReadableToo) {
  const Timeline predicted = long_run();
  Timeline measured = long_run();
  measured.tracks.pop_back();
  const std::string svg =
      svg_gantt("a comparison", "iteration predicted 1 s, measured 2 s",
                {{"predicted: plan", &predicted}, {"measured: run", &measured}});
  expect_readable(svg);
  EXPECT_NE(svg.find("class=\"divider\""), std::string::npos);
}

// A rectangle of the chart: the first <rect> whose line holds `marker`.
Box rect_of(const std::string& svg, const std::string& marker) {
  for (const auto& line : lines_of(svg)) {
    if (line.find(marker) == std::string::npos || line.rfind("<rect", 0) != 0) continue;
    const double x = attribute(line, "x=\"([0-9.]+)\"");
    const double y = attribute(line, "y=\"([0-9.]+)\"");
    const double w = attribute(line, "width=\"([0-9.]+)\"");
    const double h = attribute(line, "height=\"([0-9.]+)\"");
    return {static_cast<int>(x), static_cast<int>(y), static_cast<int>(x + w),
            static_cast<int>(y + h)};
  }
  ADD_FAILURE() << "no rect with " << marker;
  return {};
}

// Luminance (ITU-R BT.601) of the pixels strictly inside `box` (a pixel in from each edge),
// as a greyscale print shows them: mean and standard deviation.
struct Grey {
  double mean = 0;
  double deviation = 0;
};
Grey grey_inside(const Image& image, const Box& box) {
  double sum = 0, squares = 0, n = 0;
  for (int y = box.top + 2; y < box.bottom - 1; ++y) {
    for (int x = box.left + 2; x < box.right - 1; ++x) {
      const uint8_t* p = &image.rgb[3 * (static_cast<size_t>(y) * image.width + x)];
      const double luminance = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
      sum += luminance;
      squares += luminance * luminance;
      ++n;
    }
  }
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, squares / n - mean * mean))};
}

// In greyscale an interleaved stage's odd chunk is neither its even chunk nor idle time:
// its dots give it a texture the even chunk lacks, and it is darker than the idle hatch.
TEST(SvgRender, OddChunksStandApartFromEvenChunksAndIdleInGreyscale) {
  for (const char* op : {"F", "B", "W", "BW"}) {
    Timeline timeline;
    timeline.title = op;
    Track track{"stage 0", {0}, {}, {}, {}, {}};
    track.compute = {{op, 0, 0, 0, 0.0, 0.3}, {op, 0, 1, 1, 0.5, 0.8}, {op, 0, 2, 0, 0.9, 1.0}};
    timeline.tracks = {track};
    const std::string svg = svg_gantt(timeline, {600});
    const Image image = render(svg);
    const Box even = rect_of(svg, "stage 0 chunk 0:");  // the first, at 0
    const Box odd = rect_of(svg, "stage 0 chunk 1:");
    const Box bar = rect_of(svg, "fill=\"url(#bubble)\"");
    const Box idle{even.right + 4, bar.top, odd.left - 4, bar.bottom};
    // The left third of each bar: its micro-batch number is drawn in the middle.
    const auto left_third = [](const Box& b) {
      return Box{b.left, b.top, b.left + (b.right - b.left) / 3, b.bottom};
    };
    const Grey g_even = grey_inside(image, left_third(even));
    const Grey g_odd = grey_inside(image, left_third(odd));
    const Grey g_idle = grey_inside(image, idle);
    EXPECT_LT(g_even.deviation, 1.0) << op;  // a flat colour
    EXPECT_GT(g_odd.deviation, 15.0) << op;  // dotted
    EXPECT_GT(g_idle.mean - g_odd.mean, 25.0)
        << op << ": odd " << g_odd.mean << ", idle " << g_idle.mean;
  }
}

// A shorter timeline's rows end where it ends: the predicted rows of a comparison draw
// nothing, not even idle time, past the predicted iteration.
TEST(SvgRender, NothingIsDrawnPastATimelinesEnd) {
  Timeline predicted;
  predicted.title = "predicted";
  Track p{"stage 0", {0}, {}, {}, {}, {}};
  p.compute = {{"F", 0, 0, 0, 0.0, 0.2}, {"BW", 0, 0, 0, 0.3, 0.5}};
  predicted.tracks = {p};
  Timeline measured = predicted;
  measured.tracks[0].compute.push_back({"optimizer", -1, -1, 0, 0.9, 1.0});
  const std::string svg =
      svg_gantt("both", "", {{"predicted: plan", &predicted}, {"measured: run", &measured}});
  const Image image = render(svg);
  const Box bubble = rect_of(svg, "fill=\"url(#bubble)\"");  // the predicted row's
  const Box optimizer = rect_of(svg, "<title>optimizer");    // past 0.5, measured row
  ASSERT_GT(optimizer.left, bubble.right + 10);
  // Right of the predicted row's end, across the plot: white.
  int inked = 0;
  for (int y = bubble.top; y < bubble.bottom; ++y) {
    for (int x = bubble.right + 2; x < optimizer.right; ++x) {
      const uint8_t* px = &image.rgb[3 * (static_cast<size_t>(y) * image.width + x)];
      inked += (px[0] < 250 || px[1] < 250 || px[2] < 250) ? 1 : 0;
    }
  }
  EXPECT_EQ(inked, 0);
}

// A collective of every rank cannot run before its last rank arrives: until then a bar
// of it is waiting, drawn grey, not in the op's colour; so is a receive's wait.
TEST(SvgRender, AWaitInsideACollectiveIsDrawnAsWaiting) {
  Timeline timeline;
  timeline.title = "waits";
  Track early{"stage 1", {1}, {}, {}, {}, {}};
  early.compute = {{"F", 1, 0, 0, 0.0, 0.1}};
  early.communication = {{"wait RF", -1, 0, 0, 0.0, 0.05}, {"global norm", -1, -1, 0, 0.1, 1.0}};
  Track late{"stage 0", {0}, {}, {}, {}, {}};
  late.compute = {{"F", 0, 0, 0, 0.0, 0.95}};
  late.communication = {{"global norm", -1, -1, 0, 0.95, 1.0}};
  timeline.tracks = {early, late};
  const std::string svg = svg_gantt(timeline, {800});
  EXPECT_NE(svg.find(">waiting for peers (a receive, a collective until all arrive)</text>"),
            std::string::npos);
  EXPECT_EQ(svg.find("other:"), std::string::npos) << "a wait is no 'other'";
  const Image image = render(svg);
  const Box wait = rect_of(svg, "<title>waiting for its peers: global norm");
  const Box norm = rect_of(svg, "<title>global norm -1 stage -1");
  ASSERT_LT(wait.right, norm.right);
  const auto pixel = [&](int x, int y) {
    const uint8_t* p = &image.rgb[3 * (static_cast<size_t>(y) * image.width + x)];
    return std::array<int, 3>{p[0], p[1], p[2]};
  };
  const int lane = (wait.top + wait.bottom) / 2;
  const auto waiting = pixel((wait.left + wait.right) / 2, lane);
  EXPECT_EQ(waiting[0], waiting[1]);  // grey
  EXPECT_EQ(waiting[1], waiting[2]);
  // The norm itself, after the last rank arrived, in its colour (#d37295).
  const auto own = pixel((norm.left + norm.right) / 2, lane);
  EXPECT_GT(own[0] - own[1], 60);
  // The wait is most of the bar: 0.85 s of 0.9 s.
  EXPECT_GT(wait.right - wait.left, 8 * (norm.right - norm.left));
}

// A track that computes until `arrives`, then joins collective `op` until 1 s; its stage
// names it in the bars' titles.
Track arriving_at(const std::string& op, int pipeline, int group, int stage, double arrives) {
  Track t{"stage " + std::to_string(stage), {stage}, {}, {}, {}, {}};
  t.pipeline = pipeline;
  t.group = group;
  t.compute = {{"F", stage, 0, 0, 0.0, arrives}};
  t.communication = {{op, stage, -1, 0, arrives, 1.0}};
  return t;
}

// The tied embedding's sum joins the first and last stages of one pipeline: the stage that
// arrives first waits for its pipeline's other end, not for another pipeline's.
TEST(SvgRender, ATiedEmbeddingSumWaitsForItsOwnPipelinesOtherEnd) {
  Timeline timeline;
  timeline.title = "tied embedding sums";
  const std::string op = "tied embedding";
  // Pipeline 0's ends arrive at 0.2 and 0.8 s; pipeline 1's at 0.3 and 0.35 s.
  timeline.tracks = {arriving_at(op, 0, 0, 0, 0.2), arriving_at(op, 0, 1, 1, 0.8),
                     arriving_at(op, 1, 0, 2, 0.3), arriving_at(op, 1, 1, 3, 0.35)};
  const std::string svg = svg_gantt(timeline, {1000});
  const Box p0_wait = rect_of(svg, "<title>waiting for its peers: tied embedding -1 stage 0");
  const Box p1_wait = rect_of(svg, "<title>waiting for its peers: tied embedding -1 stage 2");
  const Box p0_sum = rect_of(svg, "<title>tied embedding -1 stage 0");
  const Box p1_sum = rect_of(svg, "<title>tied embedding -1 stage 2");
  // Each waits until its own pipeline's last end arrives: 0.6 s against 0.05 s.
  EXPECT_NEAR(p0_wait.right, p0_sum.left, 1);
  EXPECT_NEAR(p1_wait.right, p1_sum.left, 1);
  EXPECT_GT(p0_wait.right - p0_wait.left, 8 * (p1_wait.right - p1_wait.left));
  EXPECT_LT(p1_sum.left, p0_sum.left);
  // The last to arrive does not wait.
  EXPECT_EQ(svg.find("<title>waiting for its peers: tied embedding -1 stage 1"), std::string::npos);
  EXPECT_EQ(svg.find("<title>waiting for its peers: tied embedding -1 stage 3"), std::string::npos);
}

// A gradient all-reduce joins the data-parallel ranks of one device group: the rank that
// arrives first waits for its group's last, not for another group's.
TEST(SvgRender, AnAllReduceWaitsForItsOwnGroupsLastRank) {
  Timeline timeline;
  timeline.title = "all-reduces";
  const std::string op = "allreduce";
  // Group 0's two data-parallel ranks arrive at 0.2 and 0.7 s; group 1's one rank at 0.3 s.
  timeline.tracks = {arriving_at(op, 0, 0, 0, 0.2), arriving_at(op, 0, 0, 1, 0.7),
                     arriving_at(op, 0, 1, 2, 0.3)};
  const std::string svg = svg_gantt(timeline, {1000});
  const Box wait = rect_of(svg, "<title>waiting for its peers: allreduce -1 stage 0");
  const Box sum = rect_of(svg, "<title>allreduce -1 stage 0");
  const Box other = rect_of(svg, "<title>allreduce -1 stage 2");
  EXPECT_NEAR(wait.right, sum.left, 1);
  EXPECT_LT(other.left, sum.left);  // group 1 sums as soon as its one rank is there
  EXPECT_EQ(svg.find("<title>waiting for its peers: allreduce -1 stage 1"), std::string::npos);
  EXPECT_EQ(svg.find("<title>waiting for its peers: allreduce -1 stage 2"), std::string::npos);
}

// The layout's text widths are never below what the renderer draws, or labels would be
// cut at the left edge: each string alone at 100 px per em.
TEST(SvgRender, TextWidthIsNeverBelowTheRenderedWidth) {
  constexpr double kFont = 100;
  for (const std::string text :
       {"iiiiiiii", "WWWWMMMM", "stage 0: A100-80GB ×4 [0-3] · rank 3", "tfrj.,:;|!'", "0123456789",
        "pipeline 12, stage 7 – µs → …", "{}[]()<>@#%&*+=?~^_`$\\/\"-"}) {
    for (const auto weight : {FontWeight::regular, FontWeight::bold}) {
      std::string escaped = std::regex_replace(text, std::regex("&"), "&amp;");
      escaped = std::regex_replace(escaped, std::regex("<"), "&lt;");
      escaped = std::regex_replace(escaped, std::regex(">"), "&gt;");
      const double estimate = text_width(text, kFont, weight);
      const std::string svg =
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"6000\" height=\"200\">"
          "<rect width=\"6000\" height=\"200\" fill=\"white\"/><text x=\"10\" y=\"140\" "
          "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"100\"" +
          std::string(weight == FontWeight::bold ? " font-weight=\"bold\"" : "") + ">" + escaped +
          "</text></svg>";
      const Box ink = render(svg).ink();
      ASSERT_FALSE(ink.empty()) << text;
      const double drawn = ink.right + 1 - 10;  // from the text's origin
      EXPECT_GE(estimate, drawn) << text;
      // And not so loose that columns are far wider than their labels.
      EXPECT_LE(estimate, 1.1 * drawn) << text;
    }
  }
}

}  // namespace
}  // namespace hyperpipe::trace
