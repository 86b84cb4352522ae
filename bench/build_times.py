#!/usr/bin/env python3
"""Where a build's time went, from Ninja's own log: CPU seconds (each step's wall time;
steps overlap on several cores) of the steps that compile or link against libtorch and
of the rest, and the slowest targets.

    python3 bench/build_times.py [BUILD_DIR]    (default: build; after a cold build)

A step is on the torch side when its block in BUILD_DIR/build.ninja names libtorch's
headers (PyPI's torch/include, Debian's torch/csrc/api/include) or libraries (libtorch*):
the translation units of the runtime, the worker, their tests and benches, their
precompiled headers and their links.
"""
import collections
import re
import sys
from pathlib import Path

TORCH_MARKERS = ("torch/include", "torch/csrc/api/include", "/libtorch")
SLOWEST_SHOWN = 15


def torch_outputs(build_ninja):
    """The outputs of every build statement whose block mentions libtorch."""
    outputs, block_outputs, torch_block = set(), [], False

    def close_block():
        if torch_block:
            outputs.update(block_outputs)

    for line in build_ninja.read_text().splitlines():
        if line.startswith("build "):
            close_block()
            head = line[len("build "):].split(":", 1)[0]
            block_outputs = [o for o in head.replace("|", " ").split() if o]
            torch_block = any(m in line for m in TORCH_MARKERS)
        elif line.startswith(" ") and block_outputs:
            torch_block = torch_block or any(m in line for m in TORCH_MARKERS)
        else:
            close_block()
            block_outputs, torch_block = [], False
    close_block()
    return outputs


def main():
    build = Path(sys.argv[1] if len(sys.argv) > 1 else "build")
    log, ninja = build / ".ninja_log", build / "build.ninja"
    for path in (log, ninja):
        if not path.is_file():
            sys.exit(f"build_times: {path} not found (a Ninja build directory was expected)")
    # The last entry for each output: a rebuild replaces the earlier one.
    steps = {}
    for line in log.read_text().splitlines():
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 5:
            sys.exit(f"build_times: {log}: a line of 5 tab-separated fields expected: {line!r}")
        start, end, output = int(fields[0]), int(fields[1]), fields[3]
        steps[output] = (start, end)
    if not steps:
        sys.exit(f"build_times: {log} lists no steps")
    torch = torch_outputs(ninja)
    by_target = collections.defaultdict(float)
    torch_s = other_s = 0.0
    for output, (start, end) in steps.items():
        seconds = (end - start) / 1000
        match = re.search(r"CMakeFiles/([^/]+)\.dir", output)
        by_target[match.group(1) if match else "link " + Path(output).name] += seconds
        if output in torch:
            torch_s += seconds
        else:
            other_s += seconds
    span = (max(e for _, e in steps.values()) - min(s for s, _ in steps.values())) / 1000
    for target, seconds in sorted(by_target.items(), key=lambda kv: -kv[1])[:SLOWEST_SHOWN]:
        print(f"{seconds:8.1f} s  {target}")
    print(f"torch side: {torch_s:.0f} CPU-s; torch-free: {other_s:.0f} CPU-s; "
          f"{len(steps)} steps over {span:.0f} s of wall time")


if __name__ == "__main__":
    main()
