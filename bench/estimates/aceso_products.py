"""The share of the peak that large matrix products reach on each GPU type, from the
per-op profiles of the Aceso planner that eth-easl/sailor publishes
(sailor/Planner/baselines/Aceso/profiler/<GPU>/profiled-data-<fp16|fp32>/
<model>_mbs<b>_tp<t>_algo0.csv: each op's forward and backward microseconds, measured in
NVIDIA's PyTorch container, so fp32 products run on TF32 tensor cores where a GPU has them).

For one model (default GPT-Neo-2.7, the model the product shares of cost/op_estimate.cc are
fitted on) it takes the four weight products of a block (qkv, attention dense, MLP GEMM-1
and GEMM-2) at every micro-batch and tp degree with at least --min-flops of work, and prints
per GPU type and format the median (and range) of forward FLOP/s over the format's peak.
The other models' rows are the test of that fit.

    python3 bench/estimates/aceso_products.py --sailor PATH [--model OPT-350]
        [--hyperpipe build/hyperpipe] [--min-flops 1e11]
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sailor_layers import GPU_NAMES, read_model_configs  # noqa: E402

PROFILER = "sailor/Planner/baselines/Aceso/profiler"
# The block's weight products in Aceso's op names: output features per input feature.
PRODUCTS = {"enc-attention-qkv": 3, "enc-attention-dense": 1, "enc-MLP-GEMM-1": 4,
            "enc-MLP-GEMM-2": 4}
FILE = re.compile(r"(.+)_mbs(\d+)_tp(\d+)_algo0\.csv$")


def peaks(hyperpipe):
    result = subprocess.run([hyperpipe, "devices", "--format", "json"], capture_output=True,
                            text=True, check=True)
    return {t["name"]: t["peak_flops"] for t in json.loads(result.stdout)["gpu_types"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sailor", required=True, help="a checkout of eth-easl/sailor")
    parser.add_argument("--model", default="GPT-Neo-2.7")
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--min-flops", type=float, default=1e11)
    args = parser.parse_args()
    config = read_model_configs(args.sailor).get(args.model)
    if config is None:
        sys.exit(f"--model: {args.model} is not in {args.sailor}'s profile_all.py")
    hidden, seq = config["hidden"], config["seq_len"]
    peak = peaks(args.hyperpipe)
    print(f"Forward share of the peak, {args.model}'s block products of at least "
          f"{args.min_flops:.0e} FLOP (fp32: of the TF32 peak where the GPU has TF32)\n")
    print("| GPU type | format | products | median | range |")
    print("|---|---|---:|---:|---|")
    for gpu, ours in GPU_NAMES.items():
        for precision, peak_key in (("fp32", "tf32"), ("fp16", "fp16")):
            folder = os.path.join(args.sailor, PROFILER, gpu, f"profiled-data-{precision}")
            if not os.path.isdir(folder):
                continue
            shares = []
            for file in sorted(os.listdir(folder)):
                match = FILE.match(file)
                if not match or match[1] != args.model:
                    continue
                batch, tp = int(match[2]), int(match[3])
                with open(os.path.join(folder, file), encoding="utf-8") as f:
                    for row in csv.DictReader(f):
                        width = PRODUCTS.get(row["op_name"])
                        if width is None:
                            continue
                        flops = 2.0 * batch * seq * hidden * width * hidden / tp
                        if flops < args.min_flops:
                            continue
                        seconds = float(row["forward-compute"]) * 1e-6
                        shares.append(flops / seconds / peak[ours][peak_key])
            if shares:
                print(f"| {ours} | {precision} | "
                      f"{len(shares)} | {statistics.median(shares):.2f} | "
                      f"{min(shares):.2f}-{max(shares):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
