#!/usr/bin/env python3
"""HyperPipe's SentencePiece tokenizer held against Google's `sentencepiece` package.

The package trains models on the varied text of varied_text.py the ways LLaMA 2's and
Mistral's are set up (BPE with byte fallback, digits split, no normalization, a dummy
prefix) and the package's defaults (unigram, NFKC normalization with whitespace folding);
`hyperpipe tokenize` encodes every document with each model (through Debian's
libsentencepiece) and the ids must equal the package's own, document by document.

  HYPERPIPE=build/hyperpipe ~/.cache/hyperpipe/venv/bin/python tests/oracles/sentencepiece_oracle.py
"""
import io
import os
import sys

from encode_with_hyperpipe import compare, run_cases, tokenize

VOCAB_SIZE = 4000
# How each model is trained (sentencepiece's trainer flags).
SETUPS = {
    "llama2-style bpe": dict(model_type="bpe", byte_fallback=True, split_digits=True,
                             normalization_rule_name="identity", add_dummy_prefix=True,
                             remove_extra_whitespaces=False, character_coverage=0.9995),
    "default unigram": dict(model_type="unigram"),
}


def check(hyperpipe, name, docs, corpus, directory):
    """Trains the `name` setup's model, encodes `corpus` with it; 1 if the ids differ."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(docs), model_writer=model, vocab_size=VOCAB_SIZE,
        max_sentence_length=1 << 20, minloglevel=2, **SETUPS[name])
    path = os.path.join(directory, name.replace(" ", "-") + ".model")
    with open(path, "wb") as f:
        f.write(model.getvalue())
    processor = sentencepiece.SentencePieceProcessor(model_file=path)
    expected = processor.encode(docs)
    ours, error = tokenize(hyperpipe, corpus, path, path + "-out")
    if error:
        print(f"{name}: hyperpipe tokenize failed: {error}")
        return 1
    return compare(name, docs, ours, expected, processor.id_to_piece)


def main():
    return run_cases(check, SETUPS)


if __name__ == "__main__":
    sys.exit(main())
