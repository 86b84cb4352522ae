"""Does the estimate pick a plan that is fast in reality? (issue 39, item 4): for each of
Sailor's models and GPU types, HyperPipe plans twice on the same cluster, once from the
estimate alone and once from Sailor's per-layer GPU measurements as a profile database; the
estimate's plan is then costed on the measurements (`simulate --profiles`) and compared
with the measured best; both estimators (`plan --estimator roofline|ops`) take their turn.

The measurements (sailor/Planner/simulations/profiles_tmp.json, with the model shapes and
links as bench/estimates/sailor_layers.py reads them) become a hyperpipe.profiles/1
database per model and GPU type: each measured (micro-batch, tp) of the embedding, a block
and the head (LLaMA: its final norm added), the whole backward split into B and W in the
proportion of their FLOPs (HyperPipe's layer closed forms; the embedding's all B, as
`hyperpipe profile` times it). GPT-Neo-2.7's head rows time less than its logits product
at the GPU's peak (sailor_layers.py); its head is left to the estimate. Micro-batch sizes
between measured ones are interpolated by the cost model; unmeasured tp degrees (and sizes
outside the measured range) fall back to the estimate: a plan costed so on any stage
(beyond GPT-Neo-2.7's head) is marked †, as not judged on measurements alone.

The cluster: two nodes of the GPU type with Sailor's node size, its measured bandwidth
inside a node and between nodes (sailor/providers/network_coeffs_all_homo.json). A model
that fits on none of its plans is reported as such.

    python3 bench/estimates/sailor_ranking.py --sailor PATH [--hyperpipe build/hyperpipe]
        [--global-batch 64]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sailor_layers import (BANDWIDTHS, CLUSTER_CONFIG, GPU_NAMES, LLM_INFO,  # noqa: E402
                           PROFILES, model_yaml, read_json, read_model_configs)

COEFFICIENTS = "sailor/providers/network_coeffs_all_homo.json"
NODES = 2
KINDS = {"embedding": 0, "decoder_block": 1, "head": -1}
ESTIMATORS = ("roofline", "ops")  # plan --estimator


def cluster_yaml(gpu, per_node, inside, between):
    nodes = "".join(f"  - {{name: n{i}, gpu: {GPU_NAMES[gpu]}, count: {per_node}}}\n"
                    for i in range(NODES))
    return (f"name: sailor-{gpu.lower()}\nnodes:\n{nodes}"
            f"links:\n  intra_node: {{bandwidth: {inside / 1e9:.3f} GB/s, latency: 5 us}}\n"
            f"  intra_island: {{bandwidth: {between / 1e9:.3f} GB/s, latency: 20 us}}\n")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    return result.returncode, result.stdout, result.stderr


def layer_flops(hyperpipe, model, cluster, micro_batch, tp):
    code, out, err = run([hyperpipe, "describe", "--model", model, "--cluster", cluster,
                          "--micro-batch", str(micro_batch), "--tp", str(tp), "--format",
                          "json"])
    if code != 0:
        sys.exit(f"describe: {err}")
    return {layer["kind"]: layer for layer in json.loads(out)["model"]["layers"]}


def profile_entries(hyperpipe, name, model, cluster, gpu, by_mbs, config, per_node):
    entries = []
    for mbs, by_tp in by_mbs.items():
        for tp, layers in by_tp.items():
            if int(tp) > per_node:
                continue
            flops = layer_flops(hyperpipe, model, cluster, int(mbs), int(tp))
            last = str(max(int(k) for k in layers))
            for kind, index in KINDS.items():
                if kind == "head" and name.startswith("GPT-Neo"):
                    continue  # times less than the logits product at peak: not the head
                forward, backward = layers[last if index < 0 else str(index)][:2]
                if kind == "head" and name.startswith("LLAMA"):
                    norm = layers[str(int(last) - 1)]
                    forward, backward = forward + norm[0], backward + norm[1]
                b_flops = flops[kind]["backward_input_flops"]
                w_flops = flops[kind]["backward_weight_flops"]
                b_share = 1.0 if kind == "embedding" or b_flops + w_flops == 0 else \
                    b_flops / (b_flops + w_flops)
                entries.append({"model": name.lower(), "layer": kind,
                                "device": GPU_NAMES[gpu], "dtype": "fp32", "tp": int(tp),
                                "seq_len": config["seq_len"], "micro_batch": int(mbs),
                                "forward_ms": forward * 1e3,
                                "backward_input_ms": backward * b_share * 1e3,
                                "backward_weight_ms": backward * (1 - b_share) * 1e3,
                                "backward_ms": backward * 1e3})
    return entries


def plan(hyperpipe, model, cluster, batch, out, profiles=None, estimator="ops"):
    command = [hyperpipe, "plan", "--model", model, "--cluster", cluster, "--global-batch",
               str(batch), "--out", out, "--format", "json", "--estimator", estimator]
    if profiles:
        command += ["--profiles", profiles]
    code, stdout, stderr = run(command)
    if code != 0:
        return None, stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {code}"
    return json.loads(stdout), None


def simulated(hyperpipe, plan_file, profiles, head_estimated):
    """The plan's iteration on the measurements, and whether some stage needed the estimate
    for a layer Sailor measured at other shapes (its `source` in the report)."""
    code, out, err = run([hyperpipe, "simulate", "--plan", plan_file, "--profiles", profiles,
                          "--format", "json"])
    if code != 0:
        sys.exit(f"simulate {plan_file}: {err}")
    report = json.loads(out)
    chain_end = max(stage["layers"][1] for stage in report["stages"])
    estimated = False
    for stage in report["stages"]:
        only_head = stage["layers"] == [chain_end - 1, chain_end]
        holds_head = stage["layers"][1] == chain_end
        if head_estimated and ((holds_head and stage["source"] == "profile+estimate") or
                               (only_head and stage["source"] == "estimate")):
            continue  # GPT-Neo-2.7's head, estimated on both sides by design
        estimated = estimated or stage["source"] not in ("profile", "profile (interpolated)")
    return report["iteration_time_s"], estimated


def shape(plan_json):
    p = plan_json["plan"] if "plan" in plan_json else plan_json
    stages = p["stages"]
    return (f"{len(stages)} stage(s), mbs {p['micro_batch_size']}, "
            f"{p['schedule'] if isinstance(p['schedule'], str) else p['schedule']['kind']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sailor", required=True, help="a checkout of eth-easl/sailor")
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--global-batch", type=int, default=64)
    args = parser.parse_args()
    measured = read_json(args.sailor, PROFILES)
    info = read_json(args.sailor, LLM_INFO)
    configs = read_model_configs(args.sailor)
    per_node = read_json(args.sailor, CLUSTER_CONFIG)
    coefficients = read_json(args.sailor, COEFFICIENTS)
    intra = read_json(args.sailor, BANDWIDTHS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="sailor-ranking-") as work:
        for name, gpus in measured.items():
            model = os.path.join(work, f"{name}.yaml")
            with open(model, "w", encoding="utf-8") as f:
                f.write(model_yaml(name, configs[name], info))
            for gpu, by_mbs in gpus.items():
                size = per_node[gpu]["gpus_per_node"]
                inside = max(entry[1] for entry in intra[gpu].values())
                between = max(entry[1] for entry in coefficients["inter"][gpu].values())
                cluster = os.path.join(work, f"{gpu}.yaml")
                with open(cluster, "w", encoding="utf-8") as f:
                    f.write(cluster_yaml(gpu, size, inside, between))
                profiles = os.path.join(work, f"{name}-{gpu}.profiles.json")
                entries = profile_entries(args.hyperpipe, name, model, cluster, gpu, by_mbs,
                                          configs[name], size)
                with open(profiles, "w", encoding="utf-8") as f:
                    json.dump({"format": "hyperpipe.profiles/1", "host": f"sailor {gpu}",
                               "entries": entries}, f)
                by_profile = os.path.join(work, f"{name}-{gpu}-measured.json")
                best, refused = plan(args.hyperpipe, model, cluster, args.global_batch,
                                     by_profile, profiles)
                row = {"model": name, "gpu": GPU_NAMES[gpu], "gpus": NODES * size}
                if best is None:
                    row["refused"] = refused
                    rows.append(row)
                    continue
                head_estimated = name.startswith("GPT-Neo")
                row["measured_best_s"], row["best_estimated"] = simulated(
                    args.hyperpipe, by_profile, profiles, head_estimated)
                with open(by_profile, encoding="utf-8") as f:
                    row["measured_best"] = shape(json.load(f))
                for estimator in ESTIMATORS:
                    by_estimate = os.path.join(work, f"{name}-{gpu}-{estimator}.json")
                    guess, refused = plan(args.hyperpipe, model, cluster, args.global_batch,
                                          by_estimate, estimator=estimator)
                    if guess is None:
                        row[estimator] = {"refused": refused}
                        continue
                    seconds, estimated = simulated(args.hyperpipe, by_estimate, profiles,
                                                   head_estimated)
                    with open(by_estimate, encoding="utf-8") as f:
                        row[estimator] = {"pick": shape(json.load(f)), "seconds": seconds,
                                          "slowdown": seconds / row["measured_best_s"] - 1,
                                          "estimated": estimated}
                rows.append(row)
                print(f"{name} {gpu}: done", file=sys.stderr, flush=True)
    print(f"Global batch {args.global_batch}; {NODES} nodes of each type\n")
    def cell(pick):
        if "refused" in pick:
            return f"— | {pick['refused']}"
        mark = " †" if pick["estimated"] else ""
        return (f"{pick['pick']} | {pick['seconds']:.2f} s{mark} "
                f"({pick['slowdown'] * 100:+.1f}%)")
    print("| model | GPU type | GPUs | best plan on the measurements | roofline's pick | "
          "on the measurements | op-level pick | on the measurements |")
    print("|---|---|---:|---|---|---:|---|---:|")
    for r in rows:
        if "refused" in r:
            print(f"| {r['model']} | {r['gpu']} | {r['gpus']} | {r['refused']} | | | | |")
            continue
        mark = " †" if r["best_estimated"] else ""
        print(f"| {r['model']} | {r['gpu']} | {r['gpus']} | {r['measured_best']}: "
              f"{r['measured_best_s']:.2f} s{mark} | " +
              " | ".join(cell(r[e]) for e in ESTIMATORS) + " |")
    print("\n† some stage at a tp degree or micro-batch size Sailor did not measure: costed by "
          "the op-level estimate there, not on the measurements alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
