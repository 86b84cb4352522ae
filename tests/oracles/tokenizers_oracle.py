#!/usr/bin/env python3
"""HyperPipe's byte-level BPE held against Hugging Face `tokenizers` on over 1 MB of text.

Hugging Face's own library trains three tokenizers on the varied text of varied_text.py, set
up as GPT-2's, Llama 3's and Qwen2's files are: GPT-2's byte-level pre-tokenizer with its
own pattern; Llama 3's Split by its pattern (digits in threes) before the bytes, with
ignore_merges and tokens no merge makes; Qwen2's pattern (digits one by one) and NFC normalizer. It saves each as a
tokenizer.json (GPT-2's also as vocab.json + merges.txt); `hyperpipe tokenize` encodes
every document from each, and the ids must equal `tokenizers`' own, document by document.

  HYPERPIPE=build/hyperpipe ~/.cache/hyperpipe/venv/bin/python tests/oracles/tokenizers_oracle.py
"""
import json
import os
import sys

from encode_with_hyperpipe import compare, run_cases, tokenize

VOCAB_SIZE = 6000
END_OF_TEXT = "<|endoftext|>"
UNMERGEABLE_PIECES = 200


# The pre-tokenizer patterns of Meta's Llama 3 and of Qwen2's tokenizer.json files.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def trained(flavour, docs):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(ignore_merges=flavour == "llama3"))
    if flavour == "gpt2":
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                           use_regex=True)
    else:
        pattern = LLAMA3_PATTERN if flavour == "llama3" else QWEN2_PATTERN
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if flavour == "qwen2":
        tokenizer.normalizer = normalizers.NFC()
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=[END_OF_TEXT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(docs, trainer=trainer)
    if flavour == "llama3":
        tokenizer = with_unmergeable_pieces(tokenizer, docs)
    return tokenizer


def with_unmergeable_pieces(tokenizer, docs):
    """The tokenizer with pieces of the text added to its vocabulary that no merge makes
    (as Llama 3's vocabulary has), which only ignore_merges encodes whole."""
    from tokenizers import Tokenizer

    added = []
    for doc in docs[:50]:
        for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(doc):
            if len(tokenizer.model.tokenize(piece)) > 2 and piece not in added:
                added.append(piece)
    spec = json.loads(tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    for piece in added[:UNMERGEABLE_PIECES]:
        vocab[piece] = len(vocab) + len(spec["added_tokens"])
    return Tokenizer.from_str(json.dumps(spec))


def main():
    return run_cases(check, ("gpt2", "llama3", "qwen2"))


def check(hyperpipe, flavour, docs, corpus, directory):
    """Encodes `corpus` with `flavour`'s files; the number of files whose ids differ."""
    tokenizer = trained(flavour, docs)
    expected = [e.ids for e in tokenizer.encode_batch(docs)]
    here = os.path.join(directory, flavour)
    os.makedirs(here)
    tokenizer.save(os.path.join(here, "tokenizer.json"))
    files = ["tokenizer.json"]
    if flavour == "gpt2":
        tokenizer.model.save(here)  # vocab.json, merges.txt: GPT-2's pattern only
        files.append("vocab.json")
    failures = 0
    for name in files:
        label = f"{flavour} {name}"
        ours, error = tokenize(hyperpipe, corpus, os.path.join(here, name),
                               os.path.join(here, "out-" + name.split(".")[0]))
        if error:
            print(f"{label}: hyperpipe tokenize failed: {error}")
            failures += 1
            continue
        failures += compare(label, docs, ours, expected, tokenizer.id_to_token)
    return failures


if __name__ == "__main__":
    sys.exit(main())
