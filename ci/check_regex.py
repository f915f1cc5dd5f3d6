#!/usr/bin/env python3
"""No std::regex over unbounded input in the library or the command (issue 31).

libstdc++'s std::regex matches by recursion, one stack frame per character for patterns
such as \\S+ or (a|b)*: a long enough input (a mangled symbol, a skip message, a log line)
overflows the stack and kills the process. cujit reads such text from files and vendor
libraries, so core/, cli/ and scenarios/runner/ use linear scanners instead. A use over
input with a proven small bound may stay if its line, or the line before, says why:

    // bounded-regex: <why the input is short>

Usage:
    ci/check_regex.py [--root DIR]   check the tree (exit 1 naming each use)
    ci/check_regex.py --self-test    show that uses are caught and a justified one is not
"""
import argparse
import pathlib
import re
import sys
import tempfile

from source_walk import source_files

CHECKED = ("core", "cli", "scenarios/runner")
SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inl"}
# The header, the types and the algorithms: any of them means a regular expression runs.
USE = re.compile(r"#\s*include\s*<regex>|\bstd::(w?regex|basic_regex|w?sregex_\w+|w?cregex_\w+|regex_\w+)\b")
JUSTIFIED = "bounded-regex:"


def strip_comment(line):
    """The code of a line, without a // comment (a use named in a comment is no use)."""
    at = line.find("//")
    return line if at < 0 else line[:at]


def check_file(path, shown):
    problems = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not USE.search(strip_comment(line)):
            continue
        previous = lines[number - 2] if number >= 2 else ""
        if JUSTIFIED in line or JUSTIFIED in previous:
            continue
        problems.append(f"{shown}:{number}: std::regex (recursive; unbounded input crashes it): "
                        f"{line.strip()}  -- use a linear scan, or say '// {JUSTIFIED} <why>'")
    return problems


def check(root):
    problems = []
    for path in source_files(root, CHECKED, SUFFIXES):
        problems += check_file(path, path.relative_to(root))
    return problems


def self_test():
    cases = {
        "cli/a.cpp": ("#include <regex>\n", 1),
        "cli/b.cpp": ('static const std::regex r("x");\n', 1),
        "core/src/c.cpp": ("auto s = std::regex_replace(t, r, \"\");\n", 1),
        "core/src/d.hpp": ("for (std::sregex_iterator it(a, b, r), e; it != e; ++it) {}\n", 1),
        "scenarios/runner/e.cpp": ("#  include <regex>\n", 1),
        "cli/fine.cpp": ("// std::regex once overflowed here; now a scan\nint x;\n", 0),
        "cli/justified.cpp": ("// bounded-regex: an option name, at most 64 characters\n"
                              "static const std::regex option(\"-[a-z]+\");\n", 0),
        "conformance/test.cpp": ("#include <regex>\n", 0),  # tests are not checked
    }
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        for name, (text, _) in cases.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        found = check(root)
    failed = False
    for name, (_, expected) in cases.items():
        got = sum(1 for problem in found if problem.startswith(name + ":"))
        if got != expected:
            print(f"check_regex self-test: {name}: {got} problems, expected {expected}")
            failed = True
    if failed:
        return 1
    print("check_regex self-test: every use was caught, the comment and the justified use were not")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_regex: {len(problems)} use(s) of std::regex in {', '.join(CHECKED)}")
        return 1
    print(f"check_regex: no std::regex in {', '.join(CHECKED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
