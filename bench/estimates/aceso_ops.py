"""HyperPipe's op-level estimate of a decoder block against the per-op GPU measurements of
the Aceso planner that eth-easl/sailor publishes (issue 39): op by op, forward.

Read as they are from a checkout of the repository (`--sailor`):
  sailor/Planner/baselines/Aceso/profiler/<GPU>/profiled-data-<fp16|fp32>/
      <model>_mbs<b>_tp<t>_algo0.csv   each op's forward and backward microseconds (Megatron-
      style GPT block; fp32 in NVIDIA's PyTorch container, so on TF32 tensor cores where a
      GPU has them);
  sailor/Planner/simulations/configs/training_config_*.json   the models' shapes (the
      models without one, OPT-30, are left out).
Each (GPU type, format, micro-batch, tp) is estimated with `hyperpipe describe --estimate
--layer block` and each Aceso op matched with HyperPipe's ops of the same kernel(s).
Prints per GPU type and format the median estimated/measured forward time of each op group
over every micro-batch and tp: 1.00 is exact, below 1 the estimate is too fast.

    python3 bench/estimates/aceso_ops.py --sailor PATH [--hyperpipe build/hyperpipe]
"""
import argparse
import collections
import csv
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sailor_layers import GPU_NAMES, cluster_yaml  # noqa: E402

PROFILER = "sailor/Planner/baselines/Aceso/profiler"
CONFIGS = "sailor/Planner/simulations/configs"
FILE = re.compile(r"(.+)_mbs(\d+)_tp(\d+)_algo0\.csv$")
# Aceso's op → HyperPipe's forward ops of the same kernels.
GROUPS = {
    "enc-1st-layernorm": ("norm", ["attention norm"]),
    "enc-2nd-layernorm": ("norm", ["mlp norm"]),
    "enc-attention-qkv": ("products", ["qkv"]),
    "enc-attention-dense": ("products", ["attention out"]),
    "enc-MLP-GEMM-1": ("products", ["mlp up"]),
    "enc-MLP-GEMM-2": ("products", ["mlp down"]),
    "enc-attention-score": ("attention products", ["attention scores"]),
    "enc-attention-context": ("attention products", ["attention context"]),
    "enc-attention-softmax": ("softmax", ["softmax"]),
    "enc-attention-dropout": ("attention dropout", ["attention dropout"]),
    "enc-MLP-gelu": ("gelu", ["gelu"]),
    "enc-post-attention-dropout": ("residual dropout", ["attention residual"]),
    "enc-post-MLP-dropout": ("residual dropout", ["mlp residual"]),
}
# Intra-node bandwidth for the tp collectives (not compared here: ops only).
NOMINAL_LINK = 100e9


def model_files(root):
    models = {}
    for path in glob.glob(os.path.join(root, CONFIGS, "training_config_*.json")):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        models[config["model"]] = config
    return models


def model_yaml(config, dtype):
    fields = {"name": config["model"].lower(), "flavour": "gpt",
              "hidden": config["hidden_size"], "layers": 1, "heads": config["heads"],
              "vocab": config["vocab_size"], "seq_len": config["sequence_length"],
              "dropout": "true", "dtype": dtype}
    if dtype == "fp32":
        fields["tf32"] = "true"
    return "".join(f"{key}: {value}\n" for key, value in fields.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sailor", required=True, help="a checkout of eth-easl/sailor")
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    args = parser.parse_args()
    models = model_files(args.sailor)
    ratios = collections.defaultdict(list)  # (gpu, format, group) -> estimated / measured
    with tempfile.TemporaryDirectory(prefix="aceso-") as work:
        for gpu, ours in GPU_NAMES.items():
            cluster = os.path.join(work, f"{gpu}.yaml")
            with open(cluster, "w", encoding="utf-8") as f:
                f.write(cluster_yaml(gpu, 8, NOMINAL_LINK))
            for dtype in ("fp16", "fp32"):
                folder = os.path.join(args.sailor, PROFILER, gpu, f"profiled-data-{dtype}")
                if not os.path.isdir(folder):
                    continue
                for file in sorted(os.listdir(folder)):
                    match = FILE.match(file)
                    if not match or match[1] not in models:
                        continue
                    model = os.path.join(work, f"{match[1]}-{dtype}.yaml")
                    with open(model, "w", encoding="utf-8") as f:
                        f.write(model_yaml(models[match[1]], dtype))
                    result = subprocess.run(
                        [args.hyperpipe, "describe", "--model", model, "--cluster", cluster,
                         "--micro-batch", match[2], "--tp", match[3], "--estimate",
                         "--layer", "block", "--format", "json"],
                        capture_output=True, text=True, check=False)
                    if result.returncode != 0:
                        sys.exit(f"describe for {file}: {result.stderr}")
                    estimate = {op["name"]: op["seconds"]
                                for op in json.loads(result.stdout)["op_estimate"][0]["ops"]}
                    with open(os.path.join(folder, file), encoding="utf-8") as f:
                        for row in csv.DictReader(f):
                            if row["op_name"] not in GROUPS:
                                continue
                            group, names = GROUPS[row["op_name"]]
                            measured = float(row["forward-compute"]) * 1e-6
                            if measured > 0:
                                ratios[(ours, dtype, group)].append(
                                    sum(estimate.get(n, 0.0) for n in names) / measured)
    groups = list(dict.fromkeys(group for group, _ in GROUPS.values()))
    print("Estimated / measured forward time per op group (median over micro-batch × tp; "
          "GPT-Neo-2.7 and OPT-350)\n")
    print("| GPU type | format | " + " | ".join(groups) + " |")
    print("|---|---|" + "---:|" * len(groups))
    for gpu in GPU_NAMES.values():
        for dtype in ("fp16", "fp32"):
            cells = [ratios.get((gpu, dtype, g)) for g in groups]
            if not any(cells):
                continue
            print(f"| {gpu} | {dtype} | " +
                  " | ".join(f"{statistics.median(c):.2f}" if c else "—" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
