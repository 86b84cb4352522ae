// Helpers for tests that need a file on disk.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hyperpipe::testing {

// A path in the temporary directory unique to this process, so tests that CTest runs in
// parallel never share a file.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/hyperpipe-" + std::to_string(::getpid()) + "-" + name;
}

// The whole of the file at `path` ("" when there is none).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// An empty directory at temp_path(name), made afresh.
inline std::string fresh_directory(const std::string& name) {
  const std::string path = temp_path(name);
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

// A parameterised test's name from its case's `name` ("tp-two" becomes "tp_two": GoogleTest
// takes letters, digits and underscores). Pass as INSTANTIATE_TEST_SUITE_P's last argument.
struct NameOfCase {
  template <typename Info>
  std::string operator()(const Info& info) const {
    std::string name = info.param.name;
    for (char& c : name) {
      if (c == '-') c = '_';
    }
    return name;
  }
};

// Writes `text` to a fresh temporary file named after `name`; returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// Runs `action`, expects it to throw E, and returns the message (empty if nothing was thrown).
template <typename E, typename Action>
std::string error_message(Action&& action) {
  try {
    action();
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// One bad input file and a fragment its error message must contain.
struct BadInputCase {
  const char* text;
  const char* expected_fragment;
  friend void PrintTo(const BadInputCase& bad, std::ostream* out) { *out << bad.expected_fragment; }
};

}  // namespace hyperpipe::testing
