#include "hyperpipe/common/error.h"

#include <utility>

namespace hyperpipe {
namespace {

std::string compose(const std::string& source, const std::string& where,
                    const std::string& expected) {
  std::string message = source;
  if (!where.empty()) message += ": " + where;
  message += ": " + expected;
  return message;
}

}  // namespace

InputError::InputError(std::string source, std::string where, std::string expected)
    : std::runtime_error(compose(source, where, expected)),
      source_(std::move(source)),
      where_(std::move(where)),
      expected_(std::move(expected)) {}

}  // namespace hyperpipe
