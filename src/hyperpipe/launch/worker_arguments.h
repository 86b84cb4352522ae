// The arguments `hyperpipe launch` hands on to every `hyperpipe train` it starts: read
// for what the launcher needs to know, and changed where an elastic restart must. Callers
// name an option by train's definition of it (train_flags.h), which types its value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/launch/train_flags.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::launch {

// The value of option `name` among the arguments ("--name value" or "--name=value"), the
// last where it is given more than once.
std::optional<std::string> option_value(const std::vector<std::string>& arguments,
                                        const std::string& name);

// Whether flag `name` is among the arguments.
bool has_flag(const std::vector<std::string>& arguments, const std::string& name);

// The model as the run computes it: in the arguments' --dtype where given (fp64 costed as
// fp32: the GPU types have no fp64 peaks), else as given.
model::Model model_as_run(const model::Model& model, const std::vector<std::string>& arguments);

// The arguments without option `name`: with its value where `takes_value`, else the flag.
std::vector<std::string> without_option(const std::vector<std::string>& arguments,
                                        const std::string& name, bool takes_value);

// Option `flag`'s value, as option_value() finds it, read as its type; a number that does
// not parse reads as unset (the worker refuses it before any step).
std::optional<std::string> value_of(const std::vector<std::string>& arguments,
                                    const train_flags::Flag<std::string>& flag);
std::optional<int64_t> value_of(const std::vector<std::string>& arguments,
                                const train_flags::Flag<int64_t>& flag);
std::optional<double> value_of(const std::vector<std::string>& arguments,
                               const train_flags::Flag<double>& flag);

// Whether flag `flag` is among the arguments.
bool given(const std::vector<std::string>& arguments, const train_flags::Flag<bool>& flag);

// The arguments without `flag` (and its value, where it takes one).
template <typename T>
std::vector<std::string> without(const std::vector<std::string>& arguments,
                                 const train_flags::Flag<T>& flag) {
  return without_option(arguments, std::string(flag.name), train_flags::Flag<T>::takes_value);
}

// Adds `flag` (with `value`, where it takes one) at the end of the arguments.
template <typename T>
void append(std::vector<std::string>& arguments, const train_flags::Flag<T>& flag,
            const std::string& value = "") {
  arguments.emplace_back(flag.name);
  if (train_flags::Flag<T>::takes_value) arguments.push_back(value);
}

}  // namespace hyperpipe::launch
