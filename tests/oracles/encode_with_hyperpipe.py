"""`hyperpipe tokenize` as the tokenizer oracles run it: the documents as JSON lines in, the
ids read back from the Megatron-LM indexed dataset it writes, and compared with an oracle's."""
import json
import os
import struct
import subprocess
import tempfile

from varied_text import varied_documents


def write_documents(docs, path):
    with open(path, "w", encoding="utf-8") as f:
        for text in docs:
            f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")


def read_indexed_dataset(prefix):
    """Megatron-LM's indexed dataset: the .idx header, sizes, pointers; the tokens in .bin."""
    with open(prefix + ".idx", "rb") as f:
        index = f.read()
    assert index[:9] == b"MMIDIDX\x00\x00", "not a Megatron-LM index"
    dtype_code = index[17]
    count = struct.unpack_from("<Q", index, 18)[0]
    sizes = struct.unpack_from(f"<{count}i", index, 34)
    pointers = struct.unpack_from(f"<{count}q", index, 34 + 4 * count)
    width, fmt = {8: (2, "H"), 4: (4, "i"), 5: (8, "q")}[dtype_code]
    with open(prefix + ".bin", "rb") as f:
        data = f.read()
    return [list(struct.unpack_from(f"<{n}{fmt}", data, p)) for n, p in zip(sizes, pointers)]


def first_difference(ours, theirs):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return i
    return min(len(ours), len(theirs))


def tokenize(hyperpipe, corpus, tokenizer, prefix):
    """Each document's ids, or the error `hyperpipe tokenize` printed."""
    result = subprocess.run([hyperpipe, "tokenize", "--input", corpus, "--tokenizer", tokenizer,
                             "--output-prefix", prefix], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        return None, result.stderr.strip()
    return read_indexed_dataset(prefix), None


def compare(label, docs, ours, expected, piece_of):
    """Prints how many documents agree and the first differences; 1 if any differ."""
    wrong = [i for i, (a, b) in enumerate(zip(ours, expected)) if a != b]
    if len(ours) != len(expected):
        print(f"{label}: {len(ours)} documents, expected {len(expected)}")
        return 1
    for i in wrong[:3]:
        at = first_difference(ours[i], expected[i])
        theirs = [piece_of(t) for t in expected[i][max(0, at - 3):at + 3]]
        mine = [piece_of(t) for t in ours[i][max(0, at - 3):at + 3]]
        print(f"{label}: document {i} differs at token {at}: ours {mine}, the oracle's {theirs}")
    tokens = sum(len(d) for d in expected)
    print(f"{label}: {len(docs) - len(wrong)} of {len(docs)} documents "
          f"({sum(len(d.encode()) for d in docs)} bytes, {tokens} tokens) as the oracle encodes "
          f"them")
    return 1 if wrong else 0


def run_cases(check, cases):
    """check(hyperpipe, case, docs, corpus, directory) → the files that differ, for each
    case, over the varied text written once as JSON lines; the exit status."""
    hyperpipe = os.environ.get("HYPERPIPE", "build/hyperpipe")
    docs = varied_documents()
    failures = 0
    with tempfile.TemporaryDirectory() as directory:
        corpus = os.path.join(directory, "docs.jsonl")
        write_documents(docs, corpus)
        for case in cases:
            failures += check(hyperpipe, case, docs, corpus, directory)
    return 1 if failures else 0
