#!/usr/bin/env python3
"""Writes a small Hugging Face model directory to fine-tune (no weights can be downloaded
here): a GPT-2-style byte-level BPE learned from a text corpus (vocab.json, merges.txt),
and a GPT-2- or LLaMA-shaped model of that vocabulary with random weights (config.json,
model.safetensors), laid out and named as Hugging Face's GPT2LMHeadModel and
LlamaForCausalLM save them. Python's standard library only: it is an outside writer of
these formats, independent of HyperPipe's own code.

    python3 scripts/make_hf_model.py --corpus examples/data/corpus.txt --out out/tiny-gpt2
"""

import argparse
import collections
import json
import os
import random
import re
import struct
import sys

END_OF_TEXT = "<|endoftext|>"
# GPT-2's pre-tokenizer with Python's re: [^\W\d_] stands for \p{L} and \d for \p{N}, near
# enough to learn merges from (HyperPipe encodes with the exact pattern).
PIECES = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")
# Initial weights as GPT-2 and LLaMA draw them (normal, standard deviation 0.02).
INIT_STD = 0.02
# GPT-2's and LLaMA 2's published constants; GPT-2's dropout rate (the one HyperPipe's
# runtime draws, docs/formats.md).
LAYER_NORM_EPS = 1e-5
RMS_NORM_EPS = 1e-5
ROPE_THETA = 10000.0
GPT2_DROPOUT = 0.1


def byte_characters():
    """GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other
    68 take U+0100 on, in byte order. In GPT-2's vocabulary order (printable first)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(
        range(0xAE, 0x100))
    characters = {b: chr(b) for b in printable}
    moved = 0
    for b in range(256):
        if b not in characters:
            characters[b] = chr(0x100 + moved)
            moved += 1
    order = printable + [b for b in range(256) if b not in printable]
    return characters, order


def learn_bpe(text, merges_wanted):
    """The `merges_wanted` most frequent pairs, merged one after another as BPE learns."""
    characters, order = byte_characters()
    words = collections.Counter(
        tuple(characters[b] for b in piece.encode("utf-8")) for piece in PIECES.findall(text))
    merges = []
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        merges.append(best)
        merged = collections.Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    vocab = {characters[b]: i for i, b in enumerate(order)}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    vocab[END_OF_TEXT] = len(vocab)
    return vocab, merges


def normal(rng, count, std=INIT_STD):
    return [rng.gauss(0.0, std) for _ in range(count)]


def gpt2_tensors(rng, vocab, hidden, layers, positions):
    h, ffn = hidden, 4 * hidden
    t = [("transformer.wte.weight", [vocab, h], normal(rng, vocab * h)),
         ("transformer.wpe.weight", [positions, h], normal(rng, positions * h, 0.01))]
    for i in range(layers):
        p = f"transformer.h.{i}."
        # Conv1D keeps its weight as [in, out].
        t += [(p + "ln_1.weight", [h], [1.0] * h), (p + "ln_1.bias", [h], [0.0] * h),
              (p + "attn.c_attn.weight", [h, 3 * h], normal(rng, h * 3 * h)),
              (p + "attn.c_attn.bias", [3 * h], [0.0] * (3 * h)),
              (p + "attn.c_proj.weight", [h, h], normal(rng, h * h)),
              (p + "attn.c_proj.bias", [h], [0.0] * h),
              (p + "ln_2.weight", [h], [1.0] * h), (p + "ln_2.bias", [h], [0.0] * h),
              (p + "mlp.c_fc.weight", [h, ffn], normal(rng, h * ffn)),
              (p + "mlp.c_fc.bias", [ffn], [0.0] * ffn),
              (p + "mlp.c_proj.weight", [ffn, h], normal(rng, ffn * h)),
              (p + "mlp.c_proj.bias", [h], [0.0] * h)]
    t += [("transformer.ln_f.weight", [h], [1.0] * h), ("transformer.ln_f.bias", [h], [0.0] * h)]
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": h,
              "n_layer": layers, "n_head": max(1, h // 16), "n_inner": None,
              "n_positions": positions, "n_ctx": positions, "vocab_size": vocab,
              "activation_function": "gelu_new", "layer_norm_epsilon": LAYER_NORM_EPS,
              "resid_pdrop": GPT2_DROPOUT, "embd_pdrop": GPT2_DROPOUT,
              "attn_pdrop": GPT2_DROPOUT, "tie_word_embeddings": True}
    return t, config


def llama_tensors(rng, vocab, hidden, layers, positions):
    h = hidden
    heads = max(2, h // 16)
    kv_heads = heads // 2
    kv = kv_heads * (h // heads)
    ffn = 256 * ((int(2 * 4 * h / 3) + 255) // 256)  # LLaMA's rule, as Meta's model.py
    t = [("model.embed_tokens.weight", [vocab, h], normal(rng, vocab * h))]
    for i in range(layers):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", [h], [1.0] * h),
              (p + "self_attn.q_proj.weight", [h, h], normal(rng, h * h)),
              (p + "self_attn.k_proj.weight", [kv, h], normal(rng, kv * h)),
              (p + "self_attn.v_proj.weight", [kv, h], normal(rng, kv * h)),
              (p + "self_attn.o_proj.weight", [h, h], normal(rng, h * h)),
              (p + "post_attention_layernorm.weight", [h], [1.0] * h),
              (p + "mlp.gate_proj.weight", [ffn, h], normal(rng, ffn * h)),
              (p + "mlp.up_proj.weight", [ffn, h], normal(rng, ffn * h)),
              (p + "mlp.down_proj.weight", [h, ffn], normal(rng, h * ffn))]
    t += [("model.norm.weight", [h], [1.0] * h),
          ("lm_head.weight", [vocab, h], normal(rng, vocab * h))]
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": h,
              "intermediate_size": ffn, "num_hidden_layers": layers,
              "num_attention_heads": heads, "num_key_value_heads": kv_heads,
              "max_position_embeddings": positions, "vocab_size": vocab, "hidden_act": "silu",
              "rms_norm_eps": RMS_NORM_EPS, "rope_theta": ROPE_THETA, "rope_scaling": None,
              "attention_bias": False, "tie_word_embeddings": False}
    return t, config


def write_safetensors(path, tensors):
    """The safetensors layout: an 8-byte little-endian header length, the JSON header
    (padded with spaces so the data starts 8-byte aligned), then each tensor's bytes."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, values in tensors:
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + 4 * len(values)]}
        offset += 4 * len(values)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    temporary = path + ".partial"
    with open(temporary, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for _, _, values in tensors:
            out.write(struct.pack(f"<{len(values)}f", *values))
    os.replace(temporary, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="text to learn the tokenizer from")
    parser.add_argument("--out", required=True, help="the model directory to write")
    parser.add_argument("--flavour", choices=["gpt2", "llama"], default="gpt2")
    parser.add_argument("--merges", type=int, default=200, help="BPE merges to learn")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--positions", type=int, default=64, help="the context length")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        with open(args.corpus, encoding="utf-8") as corpus:
            text = corpus.read()
    except (OSError, UnicodeDecodeError) as error:
        sys.exit(f"make_hf_model: {args.corpus}: a UTF-8 text file to learn from ({error})")
    if args.hidden < 16 or args.hidden % 16 or args.layers < 1 or args.positions < 2:
        sys.exit("make_hf_model: --hidden a multiple of 16, --layers and --positions positive")

    vocab, merges = learn_bpe(text, args.merges)
    make = gpt2_tensors if args.flavour == "gpt2" else llama_tensors
    tensors, config = make(random.Random(args.seed), len(vocab), args.hidden, args.layers,
                           args.positions)
    config["_name_or_path"] = os.path.basename(os.path.normpath(args.out))
    config["torch_dtype"] = "float32"
    config["eos_token_id"] = config["bos_token_id"] = vocab[END_OF_TEXT]

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as out:
        json.dump(vocab, out, ensure_ascii=False)
    with open(os.path.join(args.out, "merges.txt"), "w", encoding="utf-8") as out:
        out.write("#version: 0.2\n")
        out.writelines(f"{left} {right}\n" for left, right in merges)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
    # config.json last: a directory holding it is complete.
    with open(os.path.join(args.out, "config.json"), "w", encoding="utf-8") as out:
        json.dump(config, out, indent=2)
    parameters = sum(len(values) for _, _, values in tensors)
    print(f"{args.out}: a {args.flavour} model of {parameters} parameters, "
          f"{len(vocab)} tokens ({len(merges)} BPE merges learned from {args.corpus})")


if __name__ == "__main__":
    main()
