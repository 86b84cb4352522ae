// How a command prints: tables for people, JSON for scripts.
#pragma once

#include <CLI/CLI.hpp>

namespace hyperpipe::cli {

enum class OutputFormat { table, json };

// Adds `--format table|json` to a subcommand.
void add_format_option(CLI::App& command, OutputFormat& format);

// Accepts whole numbers from 1 to kMaxSize (limits.h):
// "--tp: expected a positive integer up to 16777216, got '-3'".
const CLI::Validator& positive_integer();

}  // namespace hyperpipe::cli
