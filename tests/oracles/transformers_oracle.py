"""Hugging Face transformers as the judge of HyperPipe's weights mapping.

Small models are made and saved by transformers itself (random weights, save_pretrained,
safetensors; the LLaMA one in shards): GPT-2, LLaMA with grouped-query attention, Llama 3's
rotary base with a tied head (as Llama 3.2's), Mistral, Qwen2 with its q/k/v biases. For
each, `hyperpipe launch --init-from` runs them over 1-3 stages, tp 1 and 2 (and dp 2), for
one step with `--logits`; the last stage's logits must equal transformers' forward on the
same tokens, and the first step's loss the cross-entropy of transformers' logits. Then a
few steps are trained, `hyperpipe export-checkpoint` writes the checkpoint, transformers'
from_pretrained loads it with no missing, unexpected or mismatched keys, and its logits
equal those HyperPipe computes from the same checkpoint (a resumed run's first step).

    HYPERPIPE=build/hyperpipe python3 tests/oracles/transformers_oracle.py [--only NAME]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file

from verdict import Verdict

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "examples", "data", "corpus.txt")
VOCAB = 256  # the text data's bytes
SEQ = 16
HIDDEN, BLOCKS, HEADS, KV_HEADS, FFN = 32, 2, 4, 2, 48
# Weights far from uniform logits (transformers' own 0.02 gives a loss near ln 256 whatever
# the mapping), so a tensor in the wrong place shows in the logits.
WEIGHT_STD = 0.3
# fp32 throughout; the two sides sum in other orders (and tp in parts): a few ulps of the
# largest logit apart. Relative to the largest logit of the reference.
LOGITS_TOLERANCE = 1e-5
LOSS_TOLERANCE = 1e-5  # relative
TRAIN_STEPS = 3

ONE = [{"layers": [0, 4], "devices": [0]}]
TWO_TP2 = [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
           {"layers": [2, 4], "devices": [2, 3], "tp": 2}]
THREE = [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 3], "devices": [1]},
         {"layers": [3, 4], "devices": [2]}]
TWO_DP2 = [{"layers": [0, 3], "devices": [0, 1]}, {"layers": [3, 4], "devices": [2, 3]}]


def llama_shape():
    return dict(hidden_size=HIDDEN, num_hidden_layers=BLOCKS, num_attention_heads=HEADS,
                num_key_value_heads=KV_HEADS, intermediate_size=FFN, vocab_size=VOCAB,
                max_position_embeddings=SEQ)


def gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=HIDDEN, n_layer=BLOCKS, n_head=HEADS, n_positions=SEQ, vocab_size=VOCAB,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=VOCAB - 1,
        eos_token_id=VOCAB - 1))


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**llama_shape(),
                                                                  rms_norm_eps=1e-5))


def llama3():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        **llama_shape(), rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))


def mistral():
    return transformers.MistralForCausalLM(transformers.MistralConfig(**llama_shape()))


def qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        **llama_shape(), rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}))


# name: (maker, max_shard_size for save_pretrained (None: one file), plans)
MODELS = {
    "gpt2": (gpt2, None, {"one-stage": ONE, "two-stages-tp2": TWO_TP2, "three-stages": THREE}),
    "llama-gqa": (llama, "20KB", {"one-stage": ONE, "two-stages-tp2": TWO_TP2,
                                  "three-stages": THREE, "two-stages-dp2": TWO_DP2}),
    "llama3-tied": (llama3, None, {"two-stages-tp2": TWO_TP2, "three-stages": THREE}),
    "mistral": (mistral, None, {"one-stage": ONE, "two-stages-tp2": TWO_TP2}),
    "qwen2": (qwen2, None, {"one-stage": ONE, "two-stages-tp2": TWO_TP2, "three-stages": THREE}),
}
# The split each model trains over before its export is checked.
EXPORT_PLAN = {"gpt2": "two-stages-tp2", "llama-gqa": "three-stages",
               "llama3-tied": "two-stages-tp2", "mistral": "two-stages-tp2",
               "qwen2": "two-stages-tp2"}


# Models HyperPipe describes itself (model .yaml, no Hugging Face file to start from): their
# export writes HyperPipe's own config.json, which transformers must build the same model
# from. name: (the .yaml's fields, the class transformers must pick).
OWN_MODELS = {
    "own-gpt": (f"flavour: gpt\nhidden: {HIDDEN}\nlayers: {BLOCKS}\nheads: {HEADS}\n"
                f"vocab: {VOCAB}\nseq_len: {SEQ}\ntied_embeddings: true\ndropout: false\n"
                "dtype: fp32\n", "GPT2LMHeadModel"),
    "own-llama": (f"flavour: llama\nhidden: {HIDDEN}\nlayers: {BLOCKS}\nheads: {HEADS}\n"
                  f"kv_heads: {KV_HEADS}\nffn_hidden: {FFN}\nvocab: {VOCAB}\nseq_len: {SEQ}\n"
                  "tied_embeddings: false\ndropout: false\nrope_theta: 500000\n"
                  "norm_eps: 1.0e-5\ndtype: fp32\n", "LlamaForCausalLM"),
    "own-qwen2": (f"flavour: llama\nhidden: {HIDDEN}\nlayers: {BLOCKS}\nheads: {HEADS}\n"
                  f"kv_heads: {KV_HEADS}\nffn_hidden: {FFN}\nvocab: {VOCAB}\nseq_len: {SEQ}\n"
                  "tied_embeddings: false\ndropout: false\nrope_theta: 1000000\n"
                  "norm_eps: 1.0e-6\nqkv_bias: true\ndtype: fp32\n", "Qwen2ForCausalLM"),
}
# The learning rate the checkpoints exported are trained at: high enough that a few steps
# take HyperPipe's own initial weights (0.02) well away from uniform logits.
EXPORT_LR = "0.01"


def far_from_uniform(model, seed):
    """Every parameter redrawn: matrices and biases N(0, WEIGHT_STD), norm scales around 1."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * WEIGHT_STD
            is_norm_scale = parameter.dim() == 1 and ("ln" in name or "norm" in name) and \
                name.endswith("weight")
            parameter.copy_(1 + noise if is_norm_scale else noise)
    return model


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stdout}\n"
                           f"{result.stderr}")
    return result


def write_plan(path, model_dir, stages):
    plan = {"format": "hyperpipe.plan/1", "model": model_dir, "cluster": "a100x8",
            "micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b", "stages": stages}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(plan, f)


def read_logits(folder):
    """The --logits files of a run, joined in the global batch's order."""
    parts = [load_file(os.path.join(folder, name)) for name in sorted(os.listdir(folder))
             if name.startswith("logits-rank")]
    if not parts:
        raise RuntimeError(f"{folder}: no logits files")
    joined = {key: torch.cat([p[key] for p in parts]) for key in parts[0]}
    order = joined["sample"].argsort()
    if not torch.equal(joined["sample"][order], torch.arange(len(order))):
        raise RuntimeError(f"{folder}: the files' rows are not the global batch once each")
    return {key: value[order] for key, value in joined.items()}


def first_loss(metrics_path):
    with open(metrics_path, encoding="utf-8") as f:
        return json.loads(f.readline())["loss"]


def launch(hyperpipe, plan, init_from, logits, extra=()):
    return run([hyperpipe, "launch", "--plan", plan, "--data", CORPUS, "--seed", "0",
                "--logits", logits, *(["--init-from", init_from] if init_from else []),
                *extra], f"launch {plan}")



def compare_logits(verdict, label, ours, reference_model):
    with torch.no_grad():
        theirs = reference_model(input_ids=ours["input_ids"]).logits
    scale = theirs.abs().max().item()
    error = (ours["logits"] - theirs).abs().max().item() / scale
    verdict.check(f"{label} logits", error <= LOGITS_TOLERANCE,
                  f"max |ours - transformers'| / max |transformers'| = {error:.2e} "
                  f"(bound {LOGITS_TOLERANCE:.0e}; largest logit {scale:.1f})")
    return theirs


def check_model(hyperpipe, name, work, verdict):
    maker, max_shard_size, plans = MODELS[name]
    torch.manual_seed(0)
    model = far_from_uniform(maker(), seed=len(name)).eval()
    hf_dir = os.path.join(work, name, "hf")
    model.save_pretrained(hf_dir, **({"max_shard_size": max_shard_size}
                                     if max_shard_size else {}))
    for plan_name, stages in plans.items():
        label = f"{name} {plan_name}"
        folder = os.path.join(work, name, plan_name)
        os.makedirs(folder)
        write_plan(os.path.join(folder, "plan.json"), hf_dir, stages)
        metrics = os.path.join(folder, "metrics.jsonl")
        launch(hyperpipe, os.path.join(folder, "plan.json"), hf_dir,
               os.path.join(folder, "logits"), ["--steps", "1", "--metrics", metrics])
        ours = read_logits(os.path.join(folder, "logits"))
        theirs = compare_logits(verdict, label, ours, model)
        expected = torch.nn.functional.cross_entropy(
            theirs.reshape(-1, VOCAB).double(), ours["targets"].reshape(-1)).item()
        measured = first_loss(metrics)
        verdict.check(f"{label} first loss", abs(measured - expected) <= LOSS_TOLERANCE * expected,
                      f"ours {measured:.8f}, transformers' {expected:.8f} (uniform: "
                      f"{torch.log(torch.tensor(float(VOCAB))).item():.3f})")
    check_export(hyperpipe, name, work, hf_dir, plans[EXPORT_PLAN[name]], verdict)


def check_export(hyperpipe, name, work, model_path, stages, verdict, architecture=None):
    """Trains a few steps (from `model_path`'s weights where it is a Hugging Face
    checkpoint), exports, loads the export with transformers, compares logits."""
    label = f"{name} export"
    folder = os.path.join(work, name, "export")
    os.makedirs(folder)
    plan = os.path.join(folder, "plan.json")
    write_plan(plan, model_path, stages)
    checkpoints = os.path.join(folder, "checkpoints")
    hf_source = os.path.isdir(model_path)
    launch(hyperpipe, plan, model_path if hf_source else None,
           os.path.join(folder, "first-logits"),
           ["--steps", str(TRAIN_STEPS), "--lr", EXPORT_LR, "--checkpoint-dir", checkpoints])
    exported = os.path.join(folder, "exported")
    run([hyperpipe, "export-checkpoint", "--checkpoint", checkpoints, "--model", model_path,
         "--out", exported, "--max-shard-size", "30KB"], f"export-checkpoint {label}")
    # What HyperPipe computes from the trained checkpoint: a resumed run's first step.
    launch(hyperpipe, plan, None, os.path.join(folder, "trained-logits"),
           ["--steps", str(TRAIN_STEPS + 1), "--lr", EXPORT_LR, "--checkpoint-dir", checkpoints,
            "--resume"])
    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(
        exported, output_loading_info=True)
    keys = {kind: sorted(info.get(kind) or []) for kind in
            ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")}
    verdict.check(f"{label} keys", not any(keys.values()),
                  ", ".join(f"{kind} {value}" for kind, value in keys.items()))
    if architecture is None:
        architecture = type(transformers.AutoModelForCausalLM.from_pretrained(model_path))
        architecture = architecture.__name__
    verdict.check(f"{label} architecture", type(loaded).__name__ == architecture,
                  f"{type(loaded).__name__} (expected {architecture})")
    if not hf_source:
        check_config_read(verdict, label, loaded.config, model_path)
    trained = read_logits(os.path.join(folder, "trained-logits"))
    compare_logits(verdict, f"{label} (after {TRAIN_STEPS} steps)", trained, loaded.eval())
    first = read_logits(os.path.join(folder, "first-logits"))
    moved = (trained["logits"] - first["logits"]).abs().max().item()
    verdict.check(f"{label} trained", moved > 1e-3,
                  f"training moved the logits by up to {moved:.3f} (the export is not the "
                  "initial weights)")


def rope_theta(config):
    parameters = getattr(config, "rope_parameters", None) or {}
    return parameters.get("rope_theta", getattr(config, "rope_theta", None))


def check_config_read(verdict, label, config, yaml_path):
    """The model transformers built from HyperPipe's own config.json is the .yaml's: a
    setting it read otherwise (the rotary base, say) may barely move the logits of a
    freshly initialised model, so the settings are compared one by one."""
    with open(yaml_path, encoding="utf-8") as f:
        fields = dict(line.split(": ", 1) for line in f.read().splitlines())
    llama = fields["flavour"] == "llama"
    expected = {"hidden_size": int(fields["hidden"]), "num_hidden_layers": int(fields["layers"]),
                "num_attention_heads": int(fields["heads"]), "vocab_size": int(fields["vocab"]),
                "tie_word_embeddings": fields["tied_embeddings"] == "true"}
    read = {"hidden_size": config.hidden_size, "num_hidden_layers": config.num_hidden_layers,
            "num_attention_heads": config.num_attention_heads, "vocab_size": config.vocab_size,
            "tie_word_embeddings": config.tie_word_embeddings}
    if llama:
        expected |= {"num_key_value_heads": int(fields["kv_heads"]),
                     "intermediate_size": int(fields["ffn_hidden"]),
                     "rope_theta": float(fields["rope_theta"]),
                     "rms_norm_eps": float(fields["norm_eps"])}
        read |= {"num_key_value_heads": config.num_key_value_heads,
                 "intermediate_size": config.intermediate_size,
                 "rope_theta": rope_theta(config), "rms_norm_eps": config.rms_norm_eps}
    wrong = {key: (read[key], value) for key, value in expected.items() if read[key] != value}
    verdict.check(f"{label} config", not wrong,
                  f"transformers read {len(expected)} settings as the .yaml has them" if not wrong
                  else f"read otherwise (read, expected): {wrong}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default=os.environ.get("HYPERPIPE", "hyperpipe"))
    parser.add_argument("--only", choices=sorted([*MODELS, *OWN_MODELS]), action="append")
    args = parser.parse_args()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    verdict = Verdict()
    with tempfile.TemporaryDirectory(prefix="transformers-oracle-") as work:
        for name in args.only or [*MODELS, *OWN_MODELS]:
            if name in MODELS:
                check_model(args.hyperpipe, name, work, verdict)
                continue
            fields, architecture = OWN_MODELS[name]
            path = os.path.join(work, f"{name}.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"name: {name}\n{fields}")
            check_export(args.hyperpipe, name, work, path, TWO_TP2, verdict, architecture)
    print(f"transformers {transformers.__version__}: {verdict.failures} failure(s)")
    return 1 if verdict.failures else 0


if __name__ == "__main__":
    sys.exit(main())
