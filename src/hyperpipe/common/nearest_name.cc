#include "hyperpipe/common/nearest_name.h"

#include <algorithm>
#include <cctype>

namespace hyperpipe {
namespace {

// A name as people mean it: lower case, separators left out.
std::string folded(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '-' || c == '_' || c == '.' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// How far apart two names may be, for a name of `letters` letters, and still suggest.
constexpr size_t kLettersPerEdit = 3;

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the table: i − 2, i − 1 and i.
  std::vector<size_t> before(b.size() + 1);
  std::vector<size_t> above(b.size() + 1);
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    before.swap(above);
    above.swap(row);
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] =
          std::min({above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      // Two neighbours swapped ("stpes" for "steps"): one slip of the fingers.
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest_name(std::string_view given,
                                        const std::vector<std::string>& known) {
  const std::string target = folded(given);
  const size_t allowed = std::max<size_t>(1, target.size() / kLettersPerEdit);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const auto& name : known) {
    const size_t distance = edit_distance(target, folded(name));
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& known) {
  const auto nearest = nearest_name(given, known);
  return nearest ? "; did you mean '" + *nearest + "'?" : "";
}

}  // namespace hyperpipe
