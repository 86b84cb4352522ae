// The arguments `hyperpipe launch` hands on to every `hyperpipe train` it starts: read
// for what the launcher needs to know, and changed where an elastic restart must.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

}  // namespace hyperpipe::launch
