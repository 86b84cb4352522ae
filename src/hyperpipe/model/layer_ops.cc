#include "hyperpipe/model/layer_ops.h"

#include "hyperpipe/model/layer_units.h"

namespace hyperpipe::model {
namespace {

// Megatron's vocabulary-parallel cross-entropy reads the logits for the maximum, again for
// the exponentials' sum, writes the softmax it keeps and reads it to pick the targets'
// (megatron/core/tensor_parallel/cross_entropy.py): four passes over them.
constexpr double kCrossEntropyPasses = 4;
constexpr int kCrossEntropyKernels = 4;
// Megatron's fused scale-mask-softmax: 16-bit scores, keys in (16, 4096].
constexpr int64_t kFusedSoftmaxMinKeys = 16;
constexpr int64_t kFusedSoftmaxMaxKeys = 4096;
constexpr int kUnfusedSoftmaxKernels = 3;  // scale, masked_fill, softmax

// Builds one layer's op list; each helper appends the ops of one part of the layer.
class OpList {
 public:
  OpList(const Layer& layer, const Workload& work)
      : c_(layer.config()),
        tokens_(static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len)),
        // Norms, dropouts and residual adds see 1/tp of the tokens under sequence parallelism.
        replicated_tokens_(work.sequence_parallel && work.tp > 1 ? tokens_ / work.tp : tokens_),
        e_(static_cast<double>(bytes_per_element(c_.dtype))),
        work_(work) {}

  std::vector<LayerOp> take() { return std::move(ops_); }

  // A weight product x·W of `in` → `out` features over the device's tokens: its forward,
  // its input gradient (unless the input needs none) and its weight gradient.
  void weight_product(const std::string& name, int64_t in, int64_t out, bool bias,
                      bool input_gradient = true) {
    const auto t = static_cast<int64_t>(tokens_);
    product(name, Pass::forward, 1, t, out, in);
    if (input_gradient) product(name + " dgrad", Pass::backward_input, 1, t, in, out);
    product(name + " wgrad", Pass::backward_weight, 1, in, out, t);
    if (bias) memory(name + " bias grad", Pass::backward_weight, tokens_ * out * e_);
  }

  void product(const std::string& name, Pass pass, int64_t batch, int64_t m, int64_t n, int64_t k) {
    LayerOp op{name, pass, OpKind::product, batch, m, n, k};
    const double b = static_cast<double>(batch);
    const double md = static_cast<double>(m);
    const double nd = static_cast<double>(n);
    const double kd = static_cast<double>(k);
    op.flops = kFlopsPerMultiplyAdd * b * md * nd * kd;
    op.bytes = b * (md * kd + kd * nd + md * nd) * e_;
    ops_.push_back(op);
  }

  void memory(const std::string& name, Pass pass, double bytes, int kernels = 1) {
    LayerOp op{name, pass, OpKind::memory};
    op.bytes = bytes;
    op.kernels = kernels;
    ops_.push_back(op);
  }

  // A norm over the hidden width: reads x, writes y; its backward reads x and dy and writes
  // dx (the weight's own gradient folds into that kernel).
  void norm(const std::string& name) {
    const double row = replicated_tokens_ * static_cast<double>(c_.hidden) * e_;
    memory(name, Pass::forward, 2 * row);
    memory(name + " grad", Pass::backward_input, 3 * row);
  }

  // Dropout (when the model has it) and the residual add after a block's half.
  void residual(const std::string& name) {
    const double row = replicated_tokens_ * static_cast<double>(c_.hidden);
    const double dropout = c_.dropout ? row * (2 * e_ + kDropoutMaskBytes) : 0.0;
    memory(name, Pass::forward, dropout + 3 * row * e_, c_.dropout ? 2 : 1);
    // The gradient passes through the add; dropout's backward applies the mask.
    if (c_.dropout) memory(name + " grad", Pass::backward_input, dropout);
  }

  void attention() {
    const int64_t tp = work_.tp;
    const int64_t s = work_.seq_len;
    const int64_t d = c_.head_dim();
    const int64_t heads = c_.heads / tp;
    const int64_t batch = work_.micro_batch * heads;
    const double scores = static_cast<double>(batch) * static_cast<double>(s * s);
    if (c_.flash_attention) {
      // One kernel: Q·Kᵀ and softmax·V forward, their four gradient products backward,
      // reading q, k, v (and o, do) and writing the output (and dq, dk, dv).
      const double qkv = tokens_ * static_cast<double>(c_.hidden + 2 * c_.kv_dim()) / tp * e_;
      const double out = tokens_ * static_cast<double>(c_.hidden) / tp * e_;
      const double forward = 2 * kFlopsPerMultiplyAdd * scores * static_cast<double>(d);
      fused("attention", Pass::forward, batch, s, d, forward, qkv + out);
      fused("attention grad", Pass::backward_input, batch, s, d, 2 * forward, 2 * (qkv + out));
      return;
    }
    // Megatron's unfused core: a batched product, scale-mask-softmax, dropout, a batched
    // product; backward the mirror image. The fused scale-mask-softmax kernel reads and
    // writes the scores once; it takes only 16-bit scores of 16 < s ≤ 4096 (megatron/core/
    // fusions/fused_softmax.py, is_kernel_available), else PyTorch scales, masks and
    // softmaxes them in three kernels, and their gradients in three more.
    const bool fused_softmax =
        c_.dtype != DType::fp32 && s > kFusedSoftmaxMinKeys && s <= kFusedSoftmaxMaxKeys;
    const int softmax_kernels = fused_softmax ? 1 : kUnfusedSoftmaxKernels;
    product("attention scores", Pass::forward, batch, s, s, d);
    memory("softmax", Pass::forward, 2 * softmax_kernels * scores * e_, softmax_kernels);
    if (c_.dropout) {
      memory("attention dropout", Pass::forward, scores * (2 * e_ + kDropoutMaskBytes));
    }
    product("attention context", Pass::forward, batch, s, d, s);
    product("attention context grad (probabilities)", Pass::backward_input, batch, s, s, d);
    product("attention context grad (values)", Pass::backward_input, batch, s, d, s);
    if (c_.dropout) {
      memory("attention dropout grad", Pass::backward_input, scores * (2 * e_ + kDropoutMaskBytes));
    }
    // Softmax's gradient reads y and dy and writes dx; masking's and scaling's read and
    // write once each.
    memory("softmax grad", Pass::backward_input, (3 + 2 * (softmax_kernels - 1)) * scores * e_,
           softmax_kernels);
    product("attention scores grad (queries)", Pass::backward_input, batch, s, d, s);
    product("attention scores grad (keys)", Pass::backward_input, batch, s, d, s);
  }

  void block() {
    const int64_t tp = work_.tp;
    const int64_t h = c_.hidden;
    const int64_t f = c_.ffn_hidden / tp;
    const bool gpt = c_.flavour == Flavour::gpt;
    norm("attention norm");
    if (gpt) {
      weight_product("qkv", h, (h + 2 * c_.kv_dim()) / tp, true);
    } else {
      weight_product("query", h, h / tp, c_.qkv_bias);
      weight_product("key", h, c_.kv_dim() / tp, c_.qkv_bias);
      weight_product("value", h, c_.kv_dim() / tp, c_.qkv_bias);
      // Rotary positions on the queries and keys: read and write both, each way.
      const double rotated = 2 * tokens_ * static_cast<double>(h + c_.kv_dim()) / tp * e_;
      memory("rotary", Pass::forward, rotated, 2);
      memory("rotary grad", Pass::backward_input, rotated, 2);
    }
    attention();
    weight_product("attention out", h / tp, h, gpt);
    residual("attention residual");
    norm("mlp norm");
    const double hidden_row = tokens_ * static_cast<double>(f) * e_;
    if (gpt) {
      weight_product("mlp up", h, f, true);
      memory("gelu", Pass::forward, 2 * hidden_row);
      memory("gelu grad", Pass::backward_input, 3 * hidden_row);
    } else {
      weight_product("mlp gate", h, f, false);
      weight_product("mlp up", h, f, false);
      // silu(gate) · up: reads both, writes the product; backward reads both and the
      // output's gradient, writes both gradients.
      memory("swiglu", Pass::forward, 3 * hidden_row, 2);
      memory("swiglu grad", Pass::backward_input, 5 * hidden_row, 2);
    }
    weight_product("mlp down", f, h, gpt);
    residual("mlp residual");
  }

  void embedding() {
    const int64_t h = c_.hidden;
    const int64_t d = c_.embed_dim;
    const double rows = tokens_ * static_cast<double>(d) * e_;
    // Vocabulary-parallel: each shard looks up the ids in its slice (masked), the
    // all-reduce sums them.
    memory("token lookup", Pass::forward, tokens_ * kTokenIdBytes + 2 * rows, 3);
    if (c_.flavour == Flavour::gpt) {
      memory("position add", Pass::forward, 3 * tokens_ * static_cast<double>(h) * e_);
    }
    if (d != h) {
      // OPT's projection in: as Layer::flops counts it, split over the shards.
      const auto t = static_cast<int64_t>(tokens_);
      product("project in", Pass::forward, 1, t, h, d / work_.tp);
      product("project in dgrad", Pass::backward_input, 1, t, d / work_.tp, h);
      product("project in wgrad", Pass::backward_weight, 1, d / work_.tp, h, t);
    }
    if (c_.dropout) {
      memory("embedding dropout", Pass::forward,
             replicated_tokens_ * static_cast<double>(h) * (2 * e_ + kDropoutMaskBytes));
    }
    // PyTorch's dense embedding gradient: the slice's whole table zeroed, then the rows of
    // the ids present added in.
    const double table = static_cast<double>(c_.vocab) / work_.tp * static_cast<double>(d) * e_;
    memory("table grad", Pass::backward_weight, table + tokens_ * kTokenIdBytes + 2 * rows, 2);
  }

  void head() {
    const int64_t d = c_.embed_dim;
    const int64_t vocab = c_.vocab / work_.tp;
    const auto t = static_cast<int64_t>(tokens_);
    if (c_.final_norm) norm("final norm");
    if (d != c_.hidden) {
      product("project out", Pass::forward, 1, t, d, c_.hidden / work_.tp);
      product("project out dgrad", Pass::backward_input, 1, t, c_.hidden / work_.tp, d);
      product("project out wgrad", Pass::backward_weight, 1, c_.hidden / work_.tp, d, t);
    }
    product("logits", Pass::forward, 1, t, vocab, d);
    const double logits = tokens_ * static_cast<double>(vocab) * kLogitBytes;
    memory("cross entropy", Pass::forward, kCrossEntropyPasses * logits, kCrossEntropyKernels);
    // The kept softmax less one at the targets, scaled: read it, write the logits' gradient.
    memory("cross entropy grad", Pass::backward_input, 2 * logits, 2);
    product("logits dgrad", Pass::backward_input, 1, t, d, vocab);
    product("logits wgrad", Pass::backward_weight, 1, vocab, d, t);
  }

 private:
  void fused(const std::string& name, Pass pass, int64_t batch, int64_t s, int64_t d, double flops,
             double bytes) {
    LayerOp op{name, pass, OpKind::fused_attention, batch, s, s, d};
    op.flops = flops;
    op.bytes = bytes;
    op.causal = true;  // decoder attention
    ops_.push_back(op);
  }

  const TransformerConfig& c_;
  double tokens_;
  double replicated_tokens_;
  double e_;
  Workload work_;
  std::vector<LayerOp> ops_;
};

}  // namespace

std::string_view to_string(Pass pass) {
  switch (pass) {
    case Pass::forward:
      return "forward";
    case Pass::backward_input:
      return "backward_input";
    case Pass::backward_weight:
      return "backward_weight";
  }
  return "forward";
}

std::string_view to_string(OpKind kind) {
  switch (kind) {
    case OpKind::product:
      return "product";
    case OpKind::fused_attention:
      return "fused_attention";
    case OpKind::memory:
      return "memory";
  }
  return "memory";
}

std::vector<LayerOp> layer_ops(const Layer& layer, const Workload& work) {
  OpList ops(layer, work);
  switch (layer.kind()) {
    case LayerKind::embedding:
      ops.embedding();
      break;
    case LayerKind::decoder_block:
      ops.block();
      break;
    case LayerKind::head:
      ops.head();
      break;
  }
  return ops.take();
}

}  // namespace hyperpipe::model
