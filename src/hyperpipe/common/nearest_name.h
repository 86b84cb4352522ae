// "Did you mean …?": the known name closest to a mistyped one, for commands, options,
// catalogue models and built-in clusters.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hyperpipe {

// Optimal string alignment distance: the fewest insertions, deletions and substitutions
// of one character, and swaps of two neighbours, that turn `a` into `b` (no substring
// edited twice).
size_t edit_distance(std::string_view a, std::string_view b);

// The name of `known` closest to `given`, compared without case and without the
// separators people vary ('-', '_', '.', ' '), if it is close enough to be what was meant:
// at most a third of the given name's letters (and at least one) apart. The first of
// equally close names.
std::optional<std::string> nearest_name(std::string_view given,
                                        const std::vector<std::string>& known);

// "; did you mean 'x'?" for the nearest name, or "" when none is close.
std::string did_you_mean(std::string_view given, const std::vector<std::string>& known);

}  // namespace hyperpipe
