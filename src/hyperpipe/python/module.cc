// `import hyperpipe`: the planning commands as Python functions. Each call runs the very
// command `hyperpipe` runs (cli/app.h) in this process with `--format json`, so results and
// error messages are the CLI's own: bad input raises hyperpipe.InputError (a ValueError)
// with the CLI's message. No libtorch here: training stays with `hyperpipe launch`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"

namespace py = pybind11;

namespace hyperpipe::python {
namespace {

// A command that refused its input (exit 2): hyperpipe.InputError in Python.
class CommandInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

cli::AddCommand planning(void (*add)(CLI::App&, std::ostream&)) {
  return [add](CLI::App& app, std::ostream& out, std::ostream&) { add(app, out); };
}

// A folder of our own under the system's temporary folder, made by the first file written
// into it and removed with the object.
class TempFolder {
 public:
  TempFolder() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("hyperpipe-py-" + std::to_string(random()) + std::to_string(random()));
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Remembers that `file` stands for what the caller passed as `label`.
  void name_file(const std::string& file, std::string label) {
    labels_.emplace_back(file, std::move(label));
  }
  // `message` with every file written here named as the caller knows it, not by its
  // temporary path (which means nothing to them and is gone once the call returns).
  std::string readable(std::string message) const {
    for (const auto& [file, label] : labels_) {
      for (auto at = message.find(file); at != std::string::npos;
           at = message.find(file, at + label.size())) {
        message.replace(at, file.size(), label);
      }
    }
    return message;
  }

 private:
  std::filesystem::path path_;
  std::vector<std::pair<std::string, std::string>> labels_;
};

// Runs `hyperpipe args…` here; its standard output, or the exception its exit code means,
// with the files of `folder` named as the caller passed them.
std::string run_command(const std::vector<std::string>& args, const TempFolder& folder) {
  cli::Program program;
  program.commands = {planning(cli::add_models_command),   planning(cli::add_devices_command),
                      planning(cli::add_describe_command), cli::add_plan_command,
                      planning(cli::add_simulate_command), planning(cli::add_export_command)};
  program.version = [] { return "hyperpipe " + cli::hyperpipe_version(); };
  std::vector<const char*> argv{"hyperpipe"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  int code = 0;
  {
    py::gil_scoped_release unlocked;  // planning can take seconds; other threads go on
    code = cli::run(static_cast<int>(argv.size()), argv.data(), out, err, program);
  }
  std::string message = err.str();
  while (!message.empty() && message.back() == '\n') message.pop_back();
  constexpr std::string_view kPrefix = "error: ";
  if (message.rfind(kPrefix, 0) == 0) message.erase(0, kPrefix.size());
  message = folder.readable(std::move(message));
  if (code == kExitBadInput) throw CommandInputError(message);
  if (code != kExitOk) throw std::runtime_error(message);
  return out.str();
}

py::object parse_json(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

py::object run_json(std::vector<std::string> args, const TempFolder& folder) {
  args.insert(args.end(), {"--format", "json"});
  return parse_json(run_command(args, folder));
}

// A plan or model given as a dict goes through a file, as the CLI reads it: `name` in
// `subfolder` (a Hugging Face config is named after its folder).
std::string as_file(const py::object& value, TempFolder& folder, const std::string& argument,
                    const std::string& name, const std::string& subfolder = ".") {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (!py::isinstance<py::dict>(value)) {
    throw CommandInputError(argument + ": expected a dict or a path (str)");
  }
  const std::string text = py::module_::import("json").attr("dumps")(value).cast<std::string>();
  std::filesystem::create_directories(folder / subfolder);
  const auto path = (folder / subfolder / name).lexically_normal();
  std::ofstream(path) << text;
  folder.name_file(path.string(), "the " + argument + " dict");
  return path.string();
}

// A model: a catalogue name, a file, or a Hugging Face config dict, named after its
// `_name_or_path` or `model_type`.
std::string model_argument(const py::object& model, TempFolder& folder) {
  std::string name = "model";
  if (py::isinstance<py::dict>(model)) {
    const auto config = model.cast<py::dict>();
    for (const char* key : {"model_type", "_name_or_path"}) {
      if (config.contains(key)) name = py::str(config[key]).cast<std::string>();
    }
    name = std::filesystem::path(name).filename().string();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
    }
    if (name.empty() || name == "." || name == "..") name = "model";
  }
  return as_file(model, folder, "model", "config.json", name);
}

void add_option(std::vector<std::string>& args, const char* flag, const py::object& value) {
  if (value.is_none()) return;
  if (py::isinstance<py::bool_>(value)) {
    if (value.cast<bool>()) args.emplace_back(flag);
    return;
  }
  args.emplace_back(flag);
  args.push_back(py::str(value).cast<std::string>());
}

py::object describe(const py::object& model, const py::object& cluster,
                    const py::object& micro_batch, const py::object& seq, const py::object& tp,
                    const py::object& recompute) {
  TempFolder folder;
  std::vector<std::string> args{"describe"};
  if (!model.is_none()) add_option(args, "--model", py::str(model_argument(model, folder)));
  add_option(args, "--cluster", cluster);
  add_option(args, "--micro-batch", micro_batch);
  add_option(args, "--seq", seq);
  add_option(args, "--tp", tp);
  add_option(args, "--recompute", recompute);
  return run_json(args, folder);
}

py::object plan(const py::object& model, const py::object& cluster, const py::object& global_batch,
                const py::object& runtime, const py::object& micro_batch,
                const py::object& schedules, const py::object& max_stages, const py::object& max_tp,
                const py::object& same_dp, const py::object& sequence_parallel,
                const py::object& profiles, const py::object& baseline, const py::object& seq,
                const py::object& tp, const py::object& pp, const py::object& dp,
                const py::object& recompute, const py::object& dtype) {
  TempFolder folder;
  std::vector<std::string> args{"plan"};
  if (!model.is_none()) add_option(args, "--model", py::str(model_argument(model, folder)));
  add_option(args, "--cluster", cluster);
  add_option(args, "--global-batch", global_batch);
  add_option(args, "--runtime", runtime);
  add_option(args, "--micro-batch", micro_batch);
  if (!schedules.is_none()) {
    for (const auto& kind : schedules)
      add_option(args, "--schedule", py::reinterpret_borrow<py::object>(kind));
  }
  add_option(args, "--max-stages", max_stages);
  add_option(args, "--max-tp", max_tp);
  add_option(args, "--same-dp", same_dp);
  add_option(args, "--sequence-parallel", sequence_parallel);
  add_option(args, "--profiles", profiles);
  add_option(args, "--baseline", baseline);
  add_option(args, "--seq", seq);
  add_option(args, "--tp", tp);
  add_option(args, "--pp", pp);
  add_option(args, "--dp", dp);
  add_option(args, "--recompute", recompute);
  add_option(args, "--dtype", dtype);
  return run_json(args, folder);
}

py::object simulate(const py::object& plan_doc, const py::object& runtime, const py::object& p2p,
                    const py::object& cluster, const py::object& profiles) {
  TempFolder folder;
  std::vector<std::string> args{"simulate", "--plan",
                                as_file(plan_doc, folder, "plan", "plan.json")};
  add_option(args, "--runtime", runtime);
  add_option(args, "--p2p", p2p);
  add_option(args, "--cluster", cluster);
  add_option(args, "--profiles", profiles);
  return run_json(args, folder);
}

py::dict export_plan(const py::object& plan_doc, const std::string& to) {
  TempFolder folder;
  const auto out = folder / "exported";
  run_command({"export", "--plan", as_file(plan_doc, folder, "plan", "plan.json"), "--to", to,
               "--out", out.string()},
              folder);
  py::dict files;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    files[py::str(entry.path().filename().string())] = text.str();
  }
  return files;
}

}  // namespace
}  // namespace hyperpipe::python

PYBIND11_MODULE(hyperpipe, m) {
  namespace hp = hyperpipe::python;
  m.doc() =
      "HyperPipe's planner from Python: describe, plan, simulate and export, with the CLI's "
      "results (as dicts, the CLI's --format json documents) and its error messages.";
  m.attr("__version__") = hyperpipe::cli::hyperpipe_version();
  py::register_exception<hp::CommandInputError>(m, "InputError", PyExc_ValueError);
  m.def(
      "models", [] { return hp::run_json({"models"}, hp::TempFolder{}); },
      "The model catalogue (`hyperpipe models`).");
  m.def(
      "devices", [] { return hp::run_json({"devices"}, hp::TempFolder{}); },
      "The GPU catalogue (`hyperpipe devices`).");
  m.def("describe", &hp::describe, py::arg("model") = py::none(), py::arg("cluster") = py::none(),
        py::kw_only(), py::arg("micro_batch") = py::none(), py::arg("seq") = py::none(),
        py::arg("tp") = py::none(), py::arg("recompute") = py::none(),
        "A model (catalogue name, YAML or config.json path, or a Hugging Face config dict) "
        "on a cluster, layer by layer (`hyperpipe describe`).");
  m.def("plan", &hp::plan, py::arg("model") = py::none(), py::arg("cluster") = py::none(),
        py::arg("global_batch") = py::none(), py::kw_only(), py::arg("runtime") = py::none(),
        py::arg("micro_batch") = py::none(), py::arg("schedules") = py::none(),
        py::arg("max_stages") = py::none(), py::arg("max_tp") = py::none(),
        py::arg("same_dp") = false, py::arg("sequence_parallel") = false,
        py::arg("profiles") = py::none(), py::arg("baseline") = py::none(),
        py::arg("seq") = py::none(), py::arg("tp") = py::none(), py::arg("pp") = py::none(),
        py::arg("dp") = py::none(), py::arg("recompute") = py::none(),
        py::arg("dtype") = py::none(),
        "The fastest plan that fits (`hyperpipe plan --format json`): a dict with the plan "
        "document under 'plan', its simulated 'report', the baselines. tp, pp, dp, "
        "recompute and dtype fix those choices; the planner searches the rest.");
  m.def("simulate", &hp::simulate, py::arg("plan"), py::kw_only(), py::arg("runtime") = py::none(),
        py::arg("p2p") = py::none(), py::arg("cluster") = py::none(),
        py::arg("profiles") = py::none(),
        "A plan (dict or file) simulated (`hyperpipe simulate --format json`).");
  m.def("export", &hp::export_plan, py::arg("plan"), py::kw_only(), py::arg("to"),
        "A plan in Megatron-LM's, DeepSpeed's or torchtitan's terms: {file name: text} "
        "(`hyperpipe export`).");
}
