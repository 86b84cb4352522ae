// The subcommands of `hyperpipe`, each registered on the app with its options, help
// and examples; each prints to `out` and throws InputError on bad input.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>

namespace hyperpipe::cli {

// What `describe`, `plan` and a described `simulate` run use where no --model or --cluster is
// given (the README's first command): a 2.7B-parameter GPT-3 on the mixed A100 + V100 + T4
// example cluster.
inline constexpr const char* kDefaultModel = "gpt3-2.7b";
inline constexpr const char* kDefaultCluster = "a100-v100-t4";

void add_models_command(CLI::App& app, std::ostream& out);
void add_devices_command(CLI::App& app, std::ostream& out);
void add_describe_command(CLI::App& app, std::ostream& out);
void add_schedule_command(CLI::App& app, std::ostream& out);
void add_simulate_command(CLI::App& app, std::ostream& out);
// Planning progress, where it takes long, goes to `err`.
void add_plan_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_compare_command(CLI::App& app, std::ostream& out);
void add_export_command(CLI::App& app, std::ostream& out);
// Text or JSON lines through a tokenizer into a Megatron-LM indexed dataset.
void add_tokenize_command(CLI::App& app, std::ostream& out);
// Starts hyperpipe-worker processes; needs no libtorch itself.
void add_launch_command(CLI::App& app, std::ostream& out, std::ostream& err);
// Offers devices to a running elastic launch (through its checkpoint directory).
void add_join_command(CLI::App& app, std::ostream& out);
// One host's devices in an elastic run led from another host.
void add_agent_command(CLI::App& app, std::ostream& out, std::ostream& err);
// hyperpipe-worker's (with libtorch); `hyperpipe` hands them on (worker.h).
void add_train_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_profile_command(CLI::App& app, std::ostream& out, std::ostream& err);
void add_export_checkpoint_command(CLI::App& app, std::ostream& out, std::ostream& err);

}  // namespace hyperpipe::cli
