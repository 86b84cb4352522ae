// The options of `hyperpipe train`, each defined once with what its value is and its help:
// the worker's parser registers them from these (cli/train_command.cc), and `launch`, the
// elastic launcher and the agent read and rewrite a run's arguments through them
// (worker_arguments.h). A flag renamed here is renamed everywhere; one the worker defines
// but this list lacks fails tests/cli/train_flags_test.cc.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace hyperpipe::launch::train_flags {

// An option whose value is a T: std::string, int64_t or double; bool for a flag without one.
template <typename T>
struct Flag {
  static_assert(std::is_same_v<T, std::string> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, double> || std::is_same_v<T, bool>,
                "a train option's value is text, an integer, a number, or none");
  static constexpr bool takes_value = !std::is_same_v<T, bool>;
  std::string_view name;  // "--steps"
  std::string_view help;
};

// Any of them, as the list below holds them.
struct AnyFlag {
  template <typename T>
  constexpr AnyFlag(const Flag<T>& flag)  // NOLINT(google-explicit-constructor): a view of it
      : name(flag.name), takes_value(Flag<T>::takes_value), help(flag.help) {}
  std::string_view name;
  bool takes_value;
  std::string_view help;
};

inline constexpr Flag<std::string> kPlan{"--plan", "Plan file"};
inline constexpr Flag<std::string> kData{
    "--data",
    "Text file to train on (bytes as tokens unless --tokenizer), JSON lines "
    "(.jsonl/.ndjson/.json: a document per line), or a Megatron-LM indexed "
    "dataset (PREFIX, with PREFIX.bin and PREFIX.idx: token ids)"};
inline constexpr Flag<std::string> kTokenizer{
    "--tokenizer",
    "Tokenize text and JSON lines with: a SentencePiece .model, a "
    "tokenizer.json, a GPT-2 vocab.json (merges.txt beside it), or a "
    "directory holding one; each document ends with its end-of-document "
    "token where it has one"};
inline constexpr Flag<std::string> kJsonKey{"--json-key", "The JSON lines' field holding the text"};
inline constexpr Flag<std::string> kCluster{"--cluster", "Cluster instead of the plan's"};
inline constexpr Flag<int64_t> kSteps{"--steps", "Training steps"};
inline constexpr Flag<int64_t> kEvalInterval{
    "--eval-interval",
    "Every this many steps (and after the last), the validation loss and "
    "perplexity on windows of the data held out of training (0: no validation; "
    "Megatron-LM's --eval-interval)"};
inline constexpr Flag<int64_t> kEvalIters{
    "--eval-iters",
    "Validation batches (each a global batch) per evaluation: eval-iters × "
    "global batch windows are held out of training (Megatron-LM's --eval-iters)"};
inline constexpr Flag<double> kLr{"--lr", "AdamW learning rate (the peak, with a schedule)"};
inline constexpr Flag<double> kMinLr{
    "--min-lr", "The learning rate a decay ends at and holds (Megatron-LM's --min-lr)"};
inline constexpr Flag<int64_t> kLrWarmupIters{
    "--lr-warmup-iters",
    "Steps of linear warm-up from 0 to --lr (Megatron-LM's; the first step's rate "
    "is 0)"};
inline constexpr Flag<std::string> kLrDecayStyle{
    "--lr-decay-style", "After the warm-up: constant, linear or cosine decay to --min-lr"};
inline constexpr Flag<int64_t> kLrDecayIters{
    "--lr-decay-iters",
    "Steps from the start to the end of the decay, warm-up included (default: "
    "--steps)"};
inline constexpr Flag<double> kWeightDecay{"--weight-decay", "AdamW weight decay (matrices)"};
inline constexpr Flag<double> kClip{"--clip", "Clip gradients at this global norm (0: off)"};
inline constexpr Flag<int64_t> kSeed{"--seed", "Seed of the initial weights and the data order"};
inline constexpr Flag<std::string> kDevice{"--device", "cpu or cuda"};
inline constexpr Flag<std::string> kDtype{
    "--dtype",
    "bf16 or fp16 (mixed precision: fp32 master weights, gradients and AdamW "
    "state), fp32, or fp64 to compare runs exactly (default: the model's dtype)"};
inline constexpr Flag<double> kLossScale{
    "--loss-scale",
    "Dynamic loss scaling from this initial scale (default: 65536 in fp16, "
    "none otherwise)"};
inline constexpr Flag<int64_t> kLossScaleInterval{
    "--loss-scale-interval", "Steps without inf/nan gradients before the loss scale doubles"};
inline constexpr Flag<bool> kCheck{
    "--check",
    "Check the options, plan, model, cluster, data (token ids against the "
    "vocabulary), checkpoint directory and dtype (that this machine's libtorch "
    "computes it) and exit; `hyperpipe launch` does so once before it starts "
    "any process"};
inline constexpr Flag<int64_t> kThreads{"--threads", "Intra-op threads per process"};
inline constexpr Flag<double> kTimeout{"--timeout",
                                       "Seconds to wait for a peer before giving up on it"};
inline constexpr Flag<std::string> kMetrics{"--metrics", "Write per-step metrics (JSON lines)"};
inline constexpr Flag<std::string> kTensorboard{
    "--tensorboard",
    "Write the steps' scalars (loss, learning rate, grad norm, step time, "
    "tokens/s, rank 0's device peak) as a TensorBoard event file in this "
    "directory (`tensorboard --logdir DIR`)"};
inline constexpr Flag<std::string> kStartupRecord{
    "--startup-record",
    "Write when the run joined, built its layers, loaded its checkpoint and "
    "finished its first step (JSON, hyperpipe.startup/1; `launch --elastic` "
    "times its recoveries with it)"};
inline constexpr Flag<std::string> kTrace{"--trace", "Write the measured timeline (Chrome trace)"};
inline constexpr Flag<std::string> kSvg{"--svg", "Write the measured timeline as an SVG chart"};
inline constexpr Flag<std::string> kTimeline{
    "--timeline", "Write the measured timeline as JSON (hyperpipe.timeline/1)"};
inline constexpr Flag<int64_t> kTraceStep{
    "--trace-step",
    "The step drawn by --trace/--svg/--timeline and compared with the prediction "
    "(default: the median of the last 32)"};
inline constexpr Flag<int64_t> kTraceSteps{
    "--trace-steps",
    "Steps drawn one after another by --trace and --svg: from --trace-step, "
    "else the run's last (--timeline and the comparison keep one step)"};
inline constexpr Flag<std::string> kProfiles{
    "--profiles",
    "Profiles for the predicted iteration printed at the end "
    "(hyperpipe profile); without, the cost model's estimates"};
inline constexpr Flag<std::string> kCheckpointDir{"--checkpoint-dir", "Save checkpoints here"};
inline constexpr Flag<int64_t> kCheckpointEvery{"--checkpoint-every",
                                                "Save every this many steps (and at the end)"};
inline constexpr Flag<std::string> kInitFrom{
    "--init-from",
    "Start from a Hugging Face checkpoint's weights: its directory (config.json "
    "and model.safetensors, or shards with their index); each process reads "
    "only its own layers' tensors. A checkpoint --resume finds wins over it"};
inline constexpr Flag<std::string> kLogits{
    "--logits",
    "Write the last stage's logits of the run's first step (whole vocabulary, "
    "fp32) with the token ids they came from, one safetensors file per "
    "data-parallel rank, into this folder: to hold the model against a "
    "reference implementation on the same tokens"};
inline constexpr Flag<bool> kResume{
    "--resume",
    "Continue from the last complete checkpoint in --checkpoint-dir (of the "
    "same model, seed and data)"};
inline constexpr Flag<bool> kAdapt{
    "--adapt",
    "Re-plan when a device stays slower or faster than its profile (needs --profiles and "
    "--checkpoint-dir): where the new plan pays for the switch, checkpoint, write "
    "it and exit 75 for `hyperpipe launch --adapt` to resume with it"};
inline constexpr Flag<double> kAdaptThreshold{
    "--adapt-threshold",
    "With --adapt: how much slower or faster than its profile a device must be"};
inline constexpr Flag<int64_t> kAdaptSteps{"--adapt-steps",
                                           "With --adapt: for this many steps in a row"};
inline constexpr Flag<double> kAdaptGain{
    "--adapt-gain",
    "With --adapt: the least predicted gain, as a share of the iteration, worth "
    "a switch"};
inline constexpr Flag<bool> kHandOverOnRequest{
    "--hand-over-on-request",
    "After each checkpoint, end (exit 75) if `hyperpipe launch --elastic` asks in "
    "CHECKPOINT_DIR/elastic/handover.json (it has a plan with devices that "
    "joined); the elastic launcher passes it"};
inline constexpr Flag<double> kCheckpointWriteDelay{
    "--checkpoint-write-delay",
    "Seconds each checkpoint's writing thread waits before it writes (emulated "
    "slow storage, for tests and benchmarks of asynchronous saves)"};
inline constexpr Flag<std::string> kStandInSpeeds{
    "--stand-in-speeds",
    "A file of `DEVICE SPEED` lines, read at each step boundary when it "
    "changes: the stand-in on that device computes at that speed from then on "
    "(emulated throttling)"};
inline constexpr Flag<bool> kNoPlacementCheck{
    "--no-placement-check",
    "Start even where a process's CUDA device is not of its stage's GPU type, "
    "or the processes of one node of the cluster file run on several hosts"};
inline constexpr Flag<bool> kOverwrite{
    "--overwrite", "Replace the checkpoints an earlier run left in --checkpoint-dir"};
// Every command's --format (train's too), registered from here by cli/output_format.h.
inline constexpr Flag<std::string> kFormat{"--format",
                                           "Output: readable tables or JSON for scripts"};

// Every option of `hyperpipe train` (its --help aside).
inline constexpr auto kAll = std::to_array<AnyFlag>({kFormat,
                                                     kPlan,
                                                     kData,
                                                     kTokenizer,
                                                     kJsonKey,
                                                     kCluster,
                                                     kSteps,
                                                     kEvalInterval,
                                                     kEvalIters,
                                                     kLr,
                                                     kMinLr,
                                                     kLrWarmupIters,
                                                     kLrDecayStyle,
                                                     kLrDecayIters,
                                                     kWeightDecay,
                                                     kClip,
                                                     kSeed,
                                                     kDevice,
                                                     kDtype,
                                                     kLossScale,
                                                     kLossScaleInterval,
                                                     kCheck,
                                                     kThreads,
                                                     kTimeout,
                                                     kMetrics,
                                                     kTensorboard,
                                                     kStartupRecord,
                                                     kTrace,
                                                     kSvg,
                                                     kTimeline,
                                                     kTraceStep,
                                                     kTraceSteps,
                                                     kProfiles,
                                                     kCheckpointDir,
                                                     kCheckpointEvery,
                                                     kInitFrom,
                                                     kLogits,
                                                     kResume,
                                                     kAdapt,
                                                     kAdaptThreshold,
                                                     kAdaptSteps,
                                                     kAdaptGain,
                                                     kHandOverOnRequest,
                                                     kCheckpointWriteDelay,
                                                     kStandInSpeeds,
                                                     kNoPlacementCheck,
                                                     kOverwrite});

}  // namespace hyperpipe::launch::train_flags
