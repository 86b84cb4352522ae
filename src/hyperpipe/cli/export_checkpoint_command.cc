// `hyperpipe export-checkpoint`: a training checkpoint as a Hugging Face checkpoint
// directory (runtime/hf_export.h), for the tools that read those. Runs in
// hyperpipe-worker: the checkpoint's files are libtorch archives.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/runtime/hf_export.h"
#include "hyperpipe/runtime/trained_model.h"

namespace hyperpipe::cli {
namespace {

constexpr const char* kExportCheckpointFormat = "hyperpipe.export-checkpoint/1";

struct ExportCheckpointArgs {
  std::string checkpoint;
  std::optional<std::string> model;
  std::string out;
  std::string max_shard_size = "5GB";
  runtime::HfExportOptions options;
  OutputFormat format = OutputFormat::table;
};

void run_export_checkpoint(ExportCheckpointArgs args, std::ostream& out) {
  const auto bytes = parse_bytes(args.max_shard_size);
  if (!bytes || *bytes < 1) {
    throw InputError("--max-shard-size", args.max_shard_size, "a size such as 5GB or 512MiB");
  }
  args.options.max_shard_bytes = static_cast<uint64_t>(*bytes);
  const auto checkpoint = runtime::find_checkpoint(args.checkpoint);
  const auto trained = runtime::model_trained_as(checkpoint, args.model);
  const auto& model = trained.config;
  args.options.source_config = trained.hf_config;
  const auto summary = runtime::export_hf_checkpoint(checkpoint, model, args.out, args.options);
  if (args.format == OutputFormat::json) {
    out << nlohmann::json{{"format", kExportCheckpointFormat},
                          {"checkpoint", checkpoint.path},
                          {"steps_done", summary.steps_done},
                          {"model", model.name},
                          {"model_type", summary.model_type},
                          {"dtype", args.options.dtype},
                          {"tensors", summary.tensors},
                          {"bytes", summary.bytes},
                          {"files", summary.files}}
               .dump(2)
        << '\n';
    return;
  }
  out << fmt::format(
      "{} (step {}) exported as a Hugging Face {} checkpoint: {} tensors, {} "
      "({}), in {}:\n",
      checkpoint.path, summary.steps_done, summary.model_type, summary.tensors,
      format_bytes(static_cast<double>(summary.bytes)), args.options.dtype, args.out);
  for (const auto& file : summary.files) out << "  " << file << '\n';
}

}  // namespace

void add_export_checkpoint_command(CLI::App& app, std::ostream& out, std::ostream&) {
  auto args = std::make_shared<ExportCheckpointArgs>();
  CLI::App* command = add_worker_subcommand(app, kExportCheckpointCommand);
  command
      ->add_option("--checkpoint,-c", args->checkpoint,
                   "A step's directory (DIR/step-NNNNNNNN), or a checkpoint directory: its "
                   "newest intact checkpoint")
      ->required();
  command->add_option("--model,-m", args->model,
                      "The model it was trained as (default: what its plan names)");
  command->add_option("--out,-o", args->out, "Folder to write the checkpoint into")->required();
  command->add_option("--dtype", args->options.dtype, "Type of the written tensors")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  command
      ->add_option("--max-shard-size", args->max_shard_size,
                   "Split the weights into files of at most this size, with an index")
      ->capture_default_str();
  command->add_flag("--overwrite", args->options.overwrite,
                    "Replace a Hugging Face checkpoint already in the folder");
  add_format_option(*command, args->format);
  command->footer(
      "Examples:\n"
      "  hyperpipe launch --plan plan.json --data data/corpus --init-from gpt2/ "
      "--checkpoint-dir ckpt --steps 100\n"
      "  hyperpipe export-checkpoint --checkpoint ckpt --model gpt2/ --out gpt2-tuned/\n"
      "  hyperpipe describe --model gpt2-tuned/");
  command->callback([args, &out] { run_export_checkpoint(*args, out); });
}

}  // namespace hyperpipe::cli
