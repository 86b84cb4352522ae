#!/usr/bin/env python3
"""Runs the command blocks of a Markdown page as a reader would, so none can go stale.

Every fenced block whose info string starts with `sh`, `bash` or `python` is run, in the
page's order, in one scratch folder that looks like the repository root to the commands:
`examples/`, `scripts/`, `bench/` and `tests/` link to the sources, `build/` to the build,
`out/` is new and empty (the guide asks readers to `mkdir -p out`), `build/` is first on
PATH and the Python module on PYTHONPATH. A block that is not meant to run here says so
and why in its info string: ```` ```sh no-run (needs a GPU) ````; one without a reason is
an error.

First every relative link of the page must lead to a file of the repository and, with a
`#fragment`, to a heading of it (as GitHub makes anchors), so the pages cannot point
nowhere either.

Usage: run_doc_blocks.py --source REPO --build BUILD PAGE.md [--list] [--keep]
Exit 0 when every link resolves and every block ran and exited 0; 1 naming the broken
links, or the first block that failed (page and line) with the end of its output; 2 for a
page this script cannot read.
"""
import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(\S*)\s*(.*)$")
RUNNABLE = {"sh": "bash", "bash": "bash", "python": "python"}
NO_RUN = re.compile(r"^no-run\s*\((.+)\)\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
LINKED = ("examples", "scripts", "bench", "tests")
# A block's limit: the longest the guide's blocks take on the 2-core CI machine is about a
# minute; ten leaves room for a slow spell without letting a hang hold CI.
BLOCK_TIMEOUT_S = 600
OUTPUT_TAIL_LINES = 60


class Block:
    def __init__(self, line, language, info, text):
        self.line, self.language, self.info, self.text = line, language, info, text

    def skip_reason(self):
        """Why this block is not run, or None to run it."""
        if self.language not in RUNNABLE:
            return f"a {self.language or 'plain'} block (output or a file), not a command"
        if not self.info:
            return None
        match = NO_RUN.match(self.info)
        if not match:
            raise ValueError(f"line {self.line}: the info string after ```{self.language} must be "
                             f"empty or 'no-run (why)', not '{self.info}'")
        return match.group(1)


def read_blocks(page):
    blocks, current = [], None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if current is None and match:
            current = Block(number, match.group(1), match.group(2).strip(), [])
        elif current is not None and line.startswith("```"):
            current.text = "\n".join(current.text) + "\n"
            blocks.append(current)
            current = None
        elif current is not None:
            current.text.append(line)
    if current is not None:
        raise ValueError(f"line {current.line}: a block that is never closed")
    return blocks


def anchor_of(heading):
    """GitHub's anchor for a heading: lower case, punctuation but hyphens dropped."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors_in(page):
    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            anchors.add(anchor_of(match.group(1)))
    return anchors


def broken_links(page, source):
    """'line N: target (why)' for each relative link that leads nowhere."""
    problems, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue  # a web address: not ours to check offline
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.is_relative_to(source) or not file.exists():
                problems.append(f"line {number}: {target} (no such file in the repository)")
            elif fragment and file.suffix == ".md" and fragment not in anchors_in(file):
                problems.append(f"line {number}: {target} (no heading makes #{fragment})")
    return problems


def scratch_folder(source, build):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="hyperpipe-docs-"))
    for name in LINKED:
        (folder / name).symlink_to(source / name)
    (folder / "build").symlink_to(build)
    (folder / "out").mkdir()
    return folder


def run_block(block, folder, environment):
    """(exit code, output, seconds); the block's processes all end with it."""
    if RUNNABLE[block.language] == "bash":
        command = ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", block.text]
    else:
        command = ["python3", "-c", block.text]
    start = time.monotonic()
    # Output to a file, not a pipe: a background process the block left holds a pipe open,
    # and reading to its end would wait for that process instead of ending it.
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, cwd=folder, env=environment, stdout=log,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            code = process.wait(timeout=BLOCK_TIMEOUT_S)
            stopped = ""
        except subprocess.TimeoutExpired:
            code, stopped = 124, f"\n(stopped after {BLOCK_TIMEOUT_S} s)"
        # Whatever the block left running in the background goes with it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        log.seek(0)
        output = log.read() + stopped
    return code, output, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=pathlib.Path)
    parser.add_argument("--source", type=pathlib.Path, required=True, help="the repository root")
    parser.add_argument("--build", type=pathlib.Path, required=True, help="the build folder")
    parser.add_argument("--list", action="store_true", help="only say which blocks would run")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    page = args.page.resolve()
    name = page.relative_to(args.source.resolve()) if page.is_relative_to(
        args.source.resolve()) else page
    try:
        blocks = read_blocks(page)
        plan = [(block, block.skip_reason()) for block in blocks]
    except (OSError, ValueError) as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    # Links stay inside the repository (a page outside it, as in the runner's own tests,
    # inside its folder).
    root = args.source.resolve() if page.is_relative_to(args.source.resolve()) else page.parent
    links = broken_links(page, root)
    for problem in links:
        print(f"{name}: broken link, {problem}")
    if links:
        return 1
    for block, reason in plan:
        if reason is not None and block.language in RUNNABLE:
            print(f"{name}:{block.line}: not run: {reason}")
    to_run = [block for block, reason in plan if reason is None]
    if args.list:
        for block in to_run:
            print(f"{name}:{block.line}: would run ({block.language})")
        return 0
    folder = scratch_folder(args.source.resolve(), args.build.resolve())
    environment = dict(os.environ)
    build = str(args.build.resolve())
    environment["PATH"] = build + os.pathsep + environment.get("PATH", "")
    environment["PYTHONPATH"] = os.path.join(build, "python") + (
        os.pathsep + environment["PYTHONPATH"] if environment.get("PYTHONPATH") else "")
    try:
        for block in to_run:
            code, output, seconds = run_block(block, folder, environment)
            if code != 0:
                tail = output.splitlines()[-OUTPUT_TAIL_LINES:]
                print("\n".join(tail))
                print(f"{name}:{block.line}: this {block.language} block failed (exit code {code}) "
                      f"after {seconds:.1f} s, in {folder if args.keep else 'a scratch folder'}:")
                print(block.text, end="")
                return 1
            print(f"{name}:{block.line}: ran ({seconds:.1f} s)")
        print(f"{name}: {len(to_run)} block(s) ran, "
              f"{sum(1 for b, r in plan if r is not None and b.language in RUNNABLE)} marked no-run")
        return 0
    finally:
        if args.keep:
            print(f"scratch folder kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
