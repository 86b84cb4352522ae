"""HyperPipe's compute estimate against the per-layer GPU measurements Sailor publishes
(eth-easl/sailor, issue 39): each measured (model, GPU type, micro-batch size, tp degree)
is estimated with `hyperpipe describe --estimate` (no profile given) and compared layer by
layer, both op by op (cost/op_estimate.h, the cost model's default) and by the roofline it
replaced (`--estimator roofline`: products at a flat share of the peak, the rest at the
memory bandwidth); both add the tensor-parallel all-reduces from the same link model.

Read as they are from a checkout of the repository (`--sailor`):
  sailor/Planner/simulations/profiles_tmp.json   [model][gpu][mbs][tp][layer] =
      [forward s, backward s, optimizer step s]; layer 0 the embedding, 1 the first block,
      every later block a copy of the second block's measurement, the last the head with
      the loss (LLAMA: the final norm apart, the layer before it);
  third_party/Megatron-DeepSpeed/profile_all.py   the models as profiled (layers, hidden,
      heads, sequence length), Megatron-DeepSpeed's pretrain_gpt.py without --fp16/--bf16:
      fp32, in NVIDIA's PyTorch container (the repository's Dockerfile), which lets cuBLAS
      run fp32 products on TF32 tensor cores (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1);
  sailor/Planner/llm_info.json                     parameters per layer and tp degree: the
      padded vocabulary and the feed-forward width are read from them, and every layer's
      parameter count is checked against HyperPipe's model before anything is compared;
  sailor/Planner/simulations/configs/basic_cluster_config.json   GPUs per node;
  sailor/providers/intra_node_bandwidths.json     the measured all-reduce bandwidth inside a
      node, by GPU type and count (the link of the tp collectives).
Cases whose tp spans nodes are left out (their layer times include inter-node collectives
over links this file does not describe). Sailor's validation runs
(sailor/Planner/simulations/validation/) are never read: they are kept aside.

Prints per GPU type and estimate: the cases, median and worst |error| of forward +
backward per layer kind, and the Spearman correlation of estimated against measured block
times over every (model, micro-batch, tp) of that type.

    python3 bench/estimates/sailor_layers.py --sailor PATH [--hyperpipe build/hyperpipe]
        [--json]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

PROFILES = "sailor/Planner/simulations/profiles_tmp.json"
LLM_INFO = "sailor/Planner/llm_info.json"
MODEL_CONFIGS = "third_party/Megatron-DeepSpeed/profile_all.py"
CLUSTER_CONFIG = "sailor/Planner/simulations/configs/basic_cluster_config.json"
BANDWIDTHS = "sailor/providers/intra_node_bandwidths.json"

# Sailor's GPU names -> HyperPipe's catalogue (RTX-2080 is the 11 GB 2080 Ti:
# sailor/Planner/simulations/constants.py gives it 11 GB).
GPU_NAMES = {"A100-40": "A100-40GB", "A100-80": "A100-80GB", "V100-16": "V100-16GB",
             "GH-96": "GH200-96GB", "RTX-3090": "RTX3090", "RTX-2080": "RTX2080Ti",
             "Titan-RTX": "TitanRTX"}
# Megatron-DeepSpeed's GPT defaults: hidden and attention dropout 0.1, tied embeddings;
# its LLaMA (--model-name LLAMA): RMSNorm, SwiGLU, rotary, untied head.
FLAVOUR = {"OPT": "gpt", "GPT-Neo": "gpt", "LLAMA": "llama"}
LAYER_KINDS = ("embedding", "decoder_block", "head")
ESTIMATES = {"roofline": "roofline", "ops": "op by op"}
FFN_MULTIPLE = 256
# Biases of q, k, v, o, the two halves of the gated MLP's first product and its second.
BIAS_ROWS = 16


def read_json(root, relative):
    path = os.path.join(root, relative)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"{path}: {error}")


def read_model_configs(root):
    """`"NAME": ModelConfig(layers, hidden, heads, seq, "ID")` lines of profile_all.py."""
    path = os.path.join(root, MODEL_CONFIGS)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as error:
        sys.exit(f"{path}: {error}")
    pattern = re.compile(r'"([^"]+)":\s*ModelConfig\((\d+),\s*(\d+),\s*(\d+),\s*(\d+),'
                         r'\s*"([^"]+)"\)')
    configs = {name: {"layers": int(l), "hidden": int(h), "heads": int(a), "seq_len": int(s),
                      "id": kind}
               for name, l, h, a, s, kind in pattern.findall(text)}
    if not configs:
        sys.exit(f"{path}: no ModelConfig(...) lines found")
    return configs


def model_yaml(name, config, info, tf32=True):
    """HyperPipe's model file for one of Sailor's models, widths read from llm_info."""
    hidden, seq = config["hidden"], config["seq_len"]
    one = info[name]["1"]  # tp 1
    embedding = one["0"]["params_floats"]
    flavour = FLAVOUR[config["id"]]
    # GPT: token and learned position tables; LLaMA: the token table alone.
    positions = seq * hidden if flavour == "gpt" else 0
    vocab = (embedding - positions) // hidden
    fields = {"name": name.lower(), "flavour": flavour, "hidden": hidden,
              "layers": config["layers"], "heads": config["heads"], "vocab": vocab,
              "seq_len": seq, "dtype": "fp32", "tf32": "true" if tf32 else "false",
              "dropout": "true"}
    if flavour == "llama":
        # q, k, v, o (no grouped heads: Megatron-DeepSpeed's default) and three products of
        # the feed-forward width, a multiple of 256 as LLaMA rounds it; the norms and the
        # biases Megatron puts on every product are the remainder of a few hidden rows.
        block = one["1"]["params_floats"]
        width = (block / hidden - 4 * hidden) / 3
        fields["ffn_hidden"] = FFN_MULTIPLE * round(width / FFN_MULTIPLE)
        fields["kv_heads"] = config["heads"]
        fields["tied_embeddings"] = "false"
    else:
        fields["tied_embeddings"] = "true"
    return "".join(f"{key}: {value}\n" for key, value in fields.items())


def cluster_yaml(gpu, count, bandwidth):
    return (f"name: sailor-{gpu.lower()}\n"
            f"gpu_types:\n  - {{name: {GPU_NAMES[gpu]}}}\n"
            f"nodes:\n  - {{name: node, gpu: {GPU_NAMES[gpu]}, count: {count}}}\n"
            f"links:\n  intra_node: {{bandwidth: {bandwidth / 1e9:.3f} GB/s, latency: 5 us}}\n")


def link_bandwidth(bandwidths, gpu, tp):
    """Sailor's measured bandwidth among `tp` GPUs of a node (the next larger group it
    measured where it has none for exactly tp)."""
    measured = {int(count): entry[1] for count, entry in bandwidths.get(gpu, {}).items()}
    if not measured:
        sys.exit(f"{BANDWIDTHS}: no bandwidth measured for {gpu}")
    larger = [count for count in measured if count >= tp]
    return measured[min(larger)] if larger else measured[max(measured)]


def describe(hyperpipe, model, cluster, micro_batch, tp):
    result = subprocess.run([hyperpipe, "describe", "--model", model, "--cluster", cluster,
                             "--micro-batch", str(micro_batch), "--tp", str(tp),
                             "--estimate", "--layer", "all", "--estimator", "roofline",
                             "--format", "json"],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"describe {model} mbs {micro_batch} tp {tp}: {result.stderr}")
    return json.loads(result.stdout)


def layer_seconds(entry):
    return entry["forward_s"] + entry["backward_input_s"] + entry["backward_weight_s"]


def check_params(name, described, info):
    """The block's parameters as Sailor's llm_info counts them at tp 1: the shapes agree."""
    ours = {layer["kind"]: layer["params"] for layer in described["model"]["layers"]}
    theirs = info[name]["1"]
    for kind, key in (("embedding", "0"), ("decoder_block", "1")):
        count = theirs[key]["params_floats"]
        # Megatron-DeepSpeed's LLaMA keeps a bias on every product (add_bias_linear), which
        # HyperPipe's LLaMA has not: up to BIAS_ROWS hidden rows apart, no FLOPs.
        allowed = BIAS_ROWS * described["model"]["hidden"] if name.startswith("LLAMA") else 0
        if abs(ours[kind] - count) > allowed:
            sys.exit(f"{name}: {kind} has {ours[kind]} parameters in HyperPipe's model, "
                     f"{count} in {LLM_INFO}: the shapes do not match")


def spearman(xs, ys):
    def ranks(values):
        order = sorted(range(len(values)), key=values.__getitem__)
        result = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                result[order[k]] = (i + j) / 2
            i = j + 1
        return result
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var if var else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sailor", required=True, help="a checkout of eth-easl/sailor")
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--json", action="store_true", help="every case, as JSON")
    parser.add_argument("--no-tf32", action="store_true",
                        help="estimate fp32 products on CUDA cores (PyTorch's own default) "
                             "rather than on TF32 tensor cores (NVIDIA's container's)")
    args = parser.parse_args()
    measured = read_json(args.sailor, PROFILES)
    info = read_json(args.sailor, LLM_INFO)
    configs = read_model_configs(args.sailor)
    per_node = read_json(args.sailor, CLUSTER_CONFIG)
    bandwidths = read_json(args.sailor, BANDWIDTHS)
    cases, skipped = [], 0
    with tempfile.TemporaryDirectory(prefix="sailor-") as work:
        for name, gpus in measured.items():
            model = os.path.join(work, f"{name}.yaml")
            with open(model, "w", encoding="utf-8") as f:
                f.write(model_yaml(name, configs[name], info, tf32=not args.no_tf32))
            for gpu, by_mbs in gpus.items():
                count = per_node[gpu]["gpus_per_node"]
                for mbs, by_tp in by_mbs.items():
                    for tp, layers in by_tp.items():
                        if int(tp) > count:
                            skipped += 1
                            continue
                        cluster = os.path.join(work, f"{gpu}-{tp}.yaml")
                        with open(cluster, "w", encoding="utf-8") as f:
                            f.write(cluster_yaml(gpu, count, link_bandwidth(bandwidths, gpu,
                                                                            int(tp))))
                        described = describe(args.hyperpipe, model, cluster, int(mbs), int(tp))
                        if int(tp) == 1:  # the shapes; shards add replicated norms
                            check_params(name, described, info)
                        ours = described["cost"][0]["layers"]
                        peak = described["cost"][0]["peak_flops"]
                        by_ops = {e["kind"]: e for e in described["op_estimate"]}
                        last = str(max(int(k) for k in layers))
                        head = layers[last][:2]
                        if name.startswith("LLAMA"):
                            norm = layers[str(int(last) - 1)]
                            head = [head[0] + norm[0], head[1] + norm[1]]
                        theirs = {"embedding": layers["0"][:2], "decoder_block": layers["1"][:2],
                                  "head": head}
                        for kind, index in zip(LAYER_KINDS, (0, 1, len(ours) - 1)):
                            tp_seconds = ours[index]["tp_communication_s"]
                            flops = sum(op["flops"] for op in by_ops[kind]["ops"])
                            cases.append({"model": name, "gpu": gpu, "mbs": int(mbs),
                                          "tp": int(tp), "kind": kind,
                                          "measured_s": sum(theirs[kind]),
                                          "floor_s": flops / peak,
                                          "roofline_s": layer_seconds(ours[index]),
                                          "ops_s": layer_seconds(by_ops[kind]) + tp_seconds,
                                          "tp_s": tp_seconds})
    for case in cases:
        # Faster than the layer's products at the GPU's peak: the row times something else
        # than the layer (GPT-Neo-2.7's "head" rows hold no logits product); left out.
        case["below_peak"] = case["measured_s"] < case["floor_s"]
        for estimate in ESTIMATES:
            case[f"{estimate}_error"] = (case[f"{estimate}_s"] / case["measured_s"] - 1
                                         if case["measured_s"] and not case["below_peak"]
                                         else None)
    if args.json:
        print(json.dumps(cases, indent=1))
        return 0
    below = [c for c in cases if c["below_peak"]]
    print(f"{len(cases) // 3} measured (model, GPU, micro-batch, tp) cases; {skipped} left out "
          f"(tp spans nodes); {len(below)} layer rows faster than their products at the peak "
          f"left out ({', '.join(sorted({c['model'] + ' ' + c['kind'] for c in below}))})\n")
    print("| GPU type | estimate | cases | embedding median / worst | block median / worst | "
          "head median / worst | block Spearman |")
    print("|---|---|---:|---|---|---|---:|")
    for gpu in GPU_NAMES:
        for estimate in ESTIMATES:
            key = f"{estimate}_error"
            mine = [c for c in cases if c["gpu"] == gpu and c[key] is not None]
            if not mine:
                continue
            cells = []
            for kind in LAYER_KINDS:
                errors = [abs(c[key]) for c in mine if c["kind"] == kind]
                cells.append(f"{statistics.median(errors) * 100:.0f}% / "
                             f"{max(errors) * 100:.0f}%")
            blocks = [c for c in mine if c["kind"] == "decoder_block"]
            rho = spearman([c[f"{estimate}_s"] for c in blocks],
                           [c["measured_s"] for c in blocks])
            print(f"| {GPU_NAMES[gpu]} | {ESTIMATES[estimate]} | {len(blocks)} | "
                  f"{' | '.join(cells)} | {rho:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
