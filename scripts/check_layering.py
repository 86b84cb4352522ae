#!/usr/bin/env python3
"""Checks every #include of every part against the dependency table of the development guide.

The "Allowed dependencies" table of docs/guide/development.md lists, per part of src/hyperpipe/, the parts its
files may include. Two more rules keep libtorch out of the planning side: only the files
named in the table's torch row include libtorch (or c10d), and a torch-free file includes
no header that does, directly or through others. Prints each offending line as
FILE:LINE: why, and exits 1 if there is one.
Usage: scripts/check_layering.py [REPOSITORY]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
SOURCES = ROOT / "src" / "hyperpipe"
TABLE = ROOT / "docs" / "guide" / "development.md"
ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|\s*(.*?)\s*\|\s*$")
PART_INCLUDE = re.compile(r'^\s*#\s*include\s+"hyperpipe/([a-z_]+)/([^"]+)"')
TORCH_INCLUDE = re.compile(r"^\s*#\s*include\s+<(torch|c10|ATen|caffe2)/")
TORCH_ROW = "torch"  # the table row naming the files that may include libtorch


def read_table():
    """{part: set of parts it may include}, and the files that may include libtorch."""
    allowed, torch_files, in_table = {}, set(), False
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            in_table = line.strip().lower().endswith("allowed dependencies")
            continue
        match = ROW.match(line) if in_table else None
        if not match:
            continue
        name, cell = match.groups()
        entries = {e.strip(" `") for e in cell.split(",") if e.strip(" `—-")}
        if name == TORCH_ROW:
            torch_files = entries
        else:
            allowed[name] = entries
    if not allowed:
        sys.exit(f"{TABLE}: no \"Allowed dependencies\" table (| `part` | parts |)")
    return allowed, torch_files


def main():
    allowed, torch_files = read_table()
    problems = []
    files = sorted(p for p in SOURCES.rglob("*") if p.suffix in (".h", ".cc"))
    includes_torch = {}  # header path relative to src/ → includes libtorch (transitively)
    lines_of = {f: f.read_text(encoding="utf-8").splitlines() for f in files}

    def torch_through(path, seen=()):
        key = path.relative_to(ROOT / "src").as_posix()
        if key in includes_torch:
            return includes_torch[key]
        result = None
        for number, line in enumerate(lines_of.get(path, []), 1):
            if TORCH_INCLUDE.match(line):
                result = f"{key}:{number}"
                break
            match = PART_INCLUDE.match(line)
            target = SOURCES / match.group(1) / match.group(2) if match else None
            if target and target in lines_of and target not in seen:
                through = torch_through(target, seen + (path,))
                if through:
                    result = through
                    break
        includes_torch[key] = result
        return result

    for path in files:
        part = path.parent.name
        relative = path.relative_to(ROOT).as_posix()
        if part not in allowed:
            problems.append(f"{relative}:1: part '{part}' is not in the dependency table")
            continue
        may_use_torch = path.relative_to(SOURCES).as_posix() in torch_files or part == "runtime"
        for number, line in enumerate(lines_of[path], 1):
            where = f"{relative}:{number}"
            if TORCH_INCLUDE.match(line) and not may_use_torch:
                problems.append(f"{where}: includes libtorch outside the torch row: {line.strip()}")
            match = PART_INCLUDE.match(line)
            if not match:
                continue
            used = match.group(1)
            if used != part and used not in allowed[part]:
                problems.append(f"{where}: {part} may not include {used}: {line.strip()}")
            target = SOURCES / used / match.group(2)
            if not may_use_torch and target in lines_of:
                through = torch_through(target)
                if through:
                    problems.append(
                        f"{where}: a torch-free file includes {used}/{match.group(2)}, "
                        f"which reaches libtorch ({through})")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layering: {len(problems)} include(s) break the dependency table",
              file=sys.stderr)
        return 1
    print(f"check_layering: {len(files)} files follow the dependency table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
