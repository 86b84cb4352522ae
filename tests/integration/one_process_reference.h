// The independent reference of the multi-process tests: one process, the whole model, the
// same global batch in micro-batches with the gradient accumulated, in fp64 (where the
// order of float sums leaves nothing that matters), written without the runtime's
// executor, communicator or optimizer plumbing.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/training/text_corpus.h"
#include "run_helpers.h"

namespace hyperpipe::runtime::integration {

struct ReferenceSettings {
  uint64_t seed = 0;
  double learning_rate = 1e-3;
  // Steps whose update is left out (as a loss-scaled run skips overflowing ones): their
  // batches are drawn and their loss counted, the weights and AdamW stay.
  std::set<int> skipped_steps = {};
  // Each step's learning rate, where given (else learning_rate throughout).
  std::vector<double> rates = {};
  // Validation as TrainOptions::eval_interval and eval_iters say (0: none).
  int64_t eval_interval = 0;
  int64_t eval_iters = 1;
};

struct ReferenceRun {
  std::vector<double> losses;
  std::map<std::string, torch::Tensor> weights;
  std::vector<double> validation_losses;  // after each evaluated step, in order
};

// The global batch's `size` samples from sample `first` on, as the runtime draws them:
// inputs and targets [size, seq].
inline std::pair<torch::Tensor, torch::Tensor> micro_batch_of(const training::TextCorpus& data,
                                                              int step, int64_t global_batch,
                                                              int64_t first, int64_t size) {
  std::vector<int64_t> inputs;
  std::vector<int64_t> targets;
  for (int64_t s = first; s < first + size; ++s) {
    const auto sample = data.sample(training::sample_index(step, global_batch, s));
    inputs.insert(inputs.end(), sample.begin(), sample.end() - 1);
    targets.insert(targets.end(), sample.begin() + 1, sample.end());
  }
  const int64_t seq = data.seq_len();
  return {torch::tensor(inputs, torch::kLong).view({size, seq}),
          torch::tensor(targets, torch::kLong).view({size, seq})};
}

inline ReferenceRun one_process_reference(const std::string& model_yaml, int64_t global_batch,
                                          int64_t micro_batch, int steps,
                                          const ReferenceSettings& settings) {
  const model::Model model(model::read_model_yaml(YamlField::load_string(model_yaml, "m")));
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  const int64_t seq = model.config().seq_len;
  training::TextCorpus data = training::TextCorpus::load(kCorpus, seq, settings.seed);
  if (settings.eval_interval > 0) data.hold_out(settings.eval_iters * global_batch);
  StageModule whole(model, 0, model.num_layers(), settings.seed);
  training::OptimizerOptions options;
  options.lr.max_lr = settings.learning_rate;
  auto adamw = make_optimizer(whole.parameters(), options);
  const auto tokens = whole.embedding_tokens();
  const auto tied = whole.tied_head_tokens();
  ReferenceRun run;
  for (int step = 0; step < steps; ++step) {
    for (auto& p : whole.parameters()) p.mutable_grad() = torch::Tensor();
    double loss = 0;
    for (int64_t first = 0; first < global_batch; first += micro_batch) {
      const auto [x, y] = micro_batch_of(data, step, global_batch, first, micro_batch);
      const DropoutScope dropout_scope(DropoutPlace{settings.seed, step, first});
      const auto l =
          cross_entropy_sum(whole.forward(x), y) / static_cast<double>(global_batch * seq);
      l.backward();
      loss += l.item<double>();
    }
    run.losses.push_back(loss);
    if (settings.skipped_steps.count(step)) continue;
    if (tied.defined()) {
      const auto sum = tokens.grad() + tied.grad();
      tokens.mutable_grad().copy_(sum);
      tied.mutable_grad().copy_(sum);
    }
    double squares = 0;
    for (const auto& p : whole.parameters()) {
      if (!(tied.defined() && p.is_same(tied))) squares += p.grad().pow(2).sum().item<double>();
    }
    const double factor = clip_factor(std::sqrt(squares), options.clip_norm);
    for (auto& p : whole.parameters()) p.mutable_grad().mul_(factor);
    if (!settings.rates.empty()) {
      for (auto& group : adamw->param_groups()) group.options().set_lr(settings.rates.at(step));
    }
    adamw->step();
    if (settings.eval_interval > 0 &&
        ((step + 1) % settings.eval_interval == 0 || step + 1 == steps)) {
      // The mean over the validation batches of each batch's mean cross-entropy, no dropout.
      const torch::NoGradGuard no_grad;
      double sum = 0;
      for (int64_t batch = 0; batch < settings.eval_iters; ++batch) {
        std::vector<int64_t> inputs;
        std::vector<int64_t> targets;
        for (int64_t s = 0; s < global_batch; ++s) {
          const auto sample =
              data.validation_sample(training::sample_index(batch, global_batch, s));
          inputs.insert(inputs.end(), sample.begin(), sample.end() - 1);
          targets.insert(targets.end(), sample.begin() + 1, sample.end());
        }
        const auto x = torch::tensor(inputs, torch::kLong).view({global_batch, seq});
        const auto y = torch::tensor(targets, torch::kLong).view({global_batch, seq});
        sum += (cross_entropy_sum(whole.forward(x), y) / static_cast<double>(global_batch * seq))
                   .item<double>();
      }
      run.validation_losses.push_back(sum / static_cast<double>(settings.eval_iters));
    }
  }
  for (const auto& item : whole.named_parameters()) run.weights[item.key()] = item.value().detach();
  return run;
}

}  // namespace hyperpipe::runtime::integration
