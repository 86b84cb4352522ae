// `hyperpipe tokenize`: text or JSON lines through a tokenizer into a Megatron-LM indexed
// dataset (what Megatron's tools/preprocess_data.py does), which `train --data PREFIX`
// reads with each process touching only its windows.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/datasets/indexed_dataset.h"
#include "hyperpipe/tokenizers/tokenized_dataset.h"

namespace hyperpipe::cli {
namespace {

constexpr const char* kTokenizeFormat = "hyperpipe.tokenize/1";

struct TokenizeArgs {
  std::vector<std::string> inputs;
  std::string tokenizer;
  std::string output_prefix;
  tokenizers::TokenizeOptions options;
  OutputFormat format = OutputFormat::table;
};

void run_tokenize(const TokenizeArgs& args, std::ostream& out) {
  const auto tokenizer = tokenizers::open_tokenizer(args.tokenizer);
  const auto written = tokenizers::write_tokenized_dataset(args.inputs, *tokenizer, args.options,
                                                           args.output_prefix);
  if (args.format == OutputFormat::json) {
    out << nlohmann::json{{"format", kTokenizeFormat},
                          {"inputs", args.inputs},
                          {"tokenizer", tokenizer->describe()},
                          {"vocab_size", tokenizer->vocab_size()},
                          {"prefix", args.output_prefix},
                          {"dtype", datasets::to_string(written.dtype)},
                          {"documents", written.documents},
                          {"tokens", written.tokens}}
               .dump(2)
        << '\n';
    return;
  }
  out << fmt::format("{} documents, {} tokens ({}, {} ids) written to {}.bin and {}.idx\n",
                     written.documents, written.tokens, tokenizer->describe(),
                     datasets::to_string(written.dtype), args.output_prefix, args.output_prefix);
}

}  // namespace

void add_tokenize_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* command = app.add_subcommand(
      "tokenize", "Tokenize text or JSON lines into a Megatron-LM indexed dataset (.bin + .idx)");
  command
      ->add_option("--input,-i", args->inputs,
                   "Text files (each one document) or JSON lines (.jsonl/.ndjson/.json, a "
                   "document per line); in this order")
      ->required();
  command
      ->add_option("--tokenizer,-t", args->tokenizer,
                   "A SentencePiece .model, a tokenizer.json, a GPT-2 vocab.json (merges.txt "
                   "beside it), a directory holding one, or \"bytes\"")
      ->required();
  command
      ->add_option("--output-prefix,-o", args->output_prefix,
                   "Writes PREFIX.bin and PREFIX.idx (each whole or not at all)")
      ->required();
  command
      ->add_option("--json-key", args->options.json_key, "The JSON lines' field holding the text")
      ->capture_default_str();
  command->add_flag("--append-eod", args->options.append_end_of_document,
                    "End each document with the tokenizer's end-of-document token");
  add_format_option(*command, args->format);
  command->footer(
      "Examples:\n"
      "  hyperpipe tokenize --input corpus.jsonl --tokenizer gpt2/ --append-eod "
      "--output-prefix data/corpus\n"
      "  hyperpipe train --plan plan.json --data data/corpus --init-from gpt2/ --steps 100");
  command->callback([args, &out] { run_tokenize(*args, out); });
}

}  // namespace hyperpipe::cli
