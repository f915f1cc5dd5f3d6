#!/usr/bin/env python3
"""Checks that what README.md and docs/*.md name exists (issue 19: docs that are true).

- every `cujit <command> [action] [--flag]` (in code spans and shell lines of code blocks)
  is a command, action and flag of the built command (`cujit --help`, `cujit <command>
  --help`);
- every CUJIT_* name is a CMake option or cache variable, a macro the build defines, or a
  variable some source reads (a quoted "CUJIT_X" in C++ or Python, $CUJIT_X in a script);
- every preset named (`cmake --preset X`, `cmake --build --preset X`, `ctest --preset X`,
  "the `X` preset", "Presets: `X`, ...") is in CMakePresets.json;
- every conformance area (`conformance_X`) named is an executable of
  conformance/CMakeLists.txt, and docs/architecture.md names every one;
- every path into the tree in a code span (`ci/run.sh`, `docs/results/...`) exists (a stem
  such as `scenarios/providers/x` names the files x.*);
- every JSON field in a field table (a table whose first column is headed "field") exists
  as a quoted string in the code that produces or reads it: the files named in a
  `<!-- json-fields: PATH ... -->` comment before the table, else the source file the
  paragraph before the table names in backticks, else any source of the project.

Usage:
    ci/check_docs.py --cujit build/default/cli/cujit [--root DIR]
    ci/check_docs.py --cujit build/default/cli/cujit --self-test
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from source_walk import source_files as walk

SOURCE_DIRS = ("core", "cli", "bench", "scenarios", "reports", "conformance", "fuzz")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh", ".py"}
SCRIPT_GLOBS = ("ci/*.sh", ".ci/*", "bench/**/*.sh")
SHELL_FENCES = {"sh", "bash", "shell", "console", "yaml", "yml"}
# A command line in a code block: optional prompt or CI step, a path ending in cujit.
COMMAND_LINE = re.compile(r"^\s*(?:\$ |- run: )?(?P<path>(?:[\w.${}/-]*/)?)cujit (?P<rest>.*)$")
INLINE_COMMAND = re.compile(r"(?:^|\s)(?P<path>(?:[\w.${}/-]*/)?)cujit (?P<rest>.*)$")
WORD = re.compile(r"^[a-z][a-z0-9-]*$")
NAME = re.compile(r"\bCUJIT_[A-Z0-9_]*[A-Z0-9]\b(?![<*])")


def docs_of(root):
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def split_fences(text):
    """Yields (language or None for prose, line number, line)."""
    language = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^\s*```\s*([\w+-]*)", line)
        if fence:
            language = None if language is not None else fence.group(1).lower()
            continue
        yield language, number, line


def code_spans(line):
    return re.findall(r"`([^`]+)`", line)


# --- the command's help -------------------------------------------------------------

def help_text(cujit, *words):
    result = subprocess.run([str(cujit), *words, "--help"], capture_output=True, text=True,
                            timeout=60, check=False)
    return result.stdout + result.stderr


class CommandLine:
    """The commands, actions and flags of the built `cujit`, read from its help."""

    def __init__(self, cujit):
        self.cujit = cujit
        top = help_text(cujit)
        self.top_flags = set(re.findall(r"--([a-z][a-z0-9-]*)", top))
        section = top.split("Subcommands:", 1)[1] if "Subcommands:" in top else ""
        self.commands = set(re.findall(r"^\s{2}([a-z][a-z0-9-]*)\s", section, re.M))
        self._details = {}

    def details(self, command):
        if command not in self._details:
            text = help_text(self.cujit, command)
            flags = set(re.findall(r"--([a-z][a-z0-9-]*)", text))
            actions = set()
            for choices in re.findall(r"\{([a-z0-9,-]+)\}", text):
                actions.update(choices.split(","))
            self._details[command] = (flags, actions)
        return self._details[command]

    def problems(self, rest):
        """What is wrong with `cujit <rest>`, or an empty list."""
        rest = re.split(r"\s(?:\||&&|;|#|>|2>)\s?|`", rest)[0]
        tokens = rest.split()
        if not tokens:
            return []
        first = tokens[0]
        if first.startswith("--"):
            flag = first[2:].split("=")[0]
            return [] if flag in self.top_flags else [f"`cujit --{flag}`: no such option"]
        if not WORD.match(first):
            return []
        if first not in self.commands:
            return [f"`cujit {first}`: no such command (cujit --help)"]
        flags, actions = self.details(first)
        found = []
        if actions and len(tokens) > 1 and WORD.match(tokens[1]) and tokens[1] not in actions:
            found.append(f"`cujit {first} {tokens[1]}`: no such action (one of "
                         f"{', '.join(sorted(actions))})")
        for token in tokens[1:]:
            if token == "--":
                break
            if token.startswith("--") and len(token) > 2:
                flag = token[2:].split("=")[0].rstrip(".,:)")
                if flag and flag not in flags:
                    found.append(f"`cujit {first} --{flag}`: no such option "
                                 f"(cujit {first} --help)")
        return found


def command_mentions(text):
    """(line number, text after `cujit `) of every command the text shows."""
    for language, number, line in split_fences(text):
        if language is None or language not in SHELL_FENCES:
            for span in code_spans(line):
                match = INLINE_COMMAND.match(span)
                if match:
                    yield number, match.group("rest")
            # A plain block shows output; only a path to the command is a command there.
            if language is not None:
                match = COMMAND_LINE.match(line)
                if match and (match.group("path") or line.lstrip().startswith("$ ")):
                    yield number, match.group("rest")
            continue
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for part in re.split(r"&&|;|\|\|", code):
            match = COMMAND_LINE.match(part)
            if match:
                yield number, match.group("rest")
        for span in code_spans(line):
            match = INLINE_COMMAND.match(span)
            if match:
                yield number, match.group("rest")


# --- names, presets, fields ------------------------------------------------------------

def cmake_files(root):
    files = [root / "CMakeLists.txt"] + sorted((root / "cmake").glob("*.cmake"))
    files += sorted(root.glob("*/CMakeLists.txt")) + sorted(root.glob("*/*/CMakeLists.txt"))
    return [path for path in files if path.is_file() and "build" not in path.parts[len(root.parts):][:1]]


def source_files(root):
    return walk(root, SOURCE_DIRS, SOURCE_SUFFIXES)


def known_names(root):
    """(CMake options and cache variables, macros the build defines, variables read)."""
    options, macros, read = set(), set(), set()
    for path in cmake_files(root):
        text = path.read_text(errors="replace")
        options.update(re.findall(r"option\(\s*(CUJIT_\w+)", text))
        options.update(re.findall(r"set\(\s*(CUJIT_\w+)[^)]*\bCACHE\b", text, re.S))
        macros.update(re.findall(r"\b(CUJIT_\w+)=", text))
        read.update(re.findall(r"\$ENV\{(CUJIT_\w+)\}", text))
    for path in source_files(root):
        read.update(re.findall(r"[\"'](CUJIT_\w+)[\"']", path.read_text(errors="replace")))
    for pattern in SCRIPT_GLOBS:
        for path in root.glob(pattern):
            if path.is_file():
                read.update(re.findall(r"\$\{?(CUJIT_\w+)", path.read_text(errors="replace")))
    return options, macros, read


def presets_of(root):
    data = json.loads((root / "CMakePresets.json").read_text())
    return {kind: {preset["name"] for preset in data.get(kind + "Presets", [])}
            for kind in ("configure", "build", "test")}


def preset_mentions(text):
    """(line number, preset kind, name) of every preset the text names."""
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        for tool, name in re.findall(r"\b(cmake --build|ctest|cmake)(?: [^`;&|]*?)? --preset[= ]([\w-]+)",
                                     line):
            yield number, {"cmake": "configure", "cmake --build": "build", "ctest": "test"}[tool], name
        for name in re.findall(r"`([\w-]+)` preset\b", line):
            yield number, "configure", name
        for name in re.findall(r"\bpreset `([\w-]+)`", line):
            yield number, "configure", name
        # A listing may go on over the next line.
        following = lines[number] if number < len(lines) else ""
        listing = re.search(r"\bPresets: (.*?)(?:\.\s|\.$|$)", line + " " + following) \
            if "Presets:" in line else None
        if listing:
            for name in re.findall(r"`([\w-]+)`", listing.group(1)):
                yield number, "configure", name


TREE_PATH = re.compile(r"^((?:core|ci|cmake|docs|bench|scenarios|conformance|reports|fuzz|cli|"
                       r"\.ci)/[\w./+-]*)$")


def tree_paths(line):
    """Paths into the source tree that the code spans of a line name (no patterns)."""
    for span in code_spans(line):
        for token in span.split():
            match = TREE_PATH.match(token.rstrip(".,:;)"))
            if match and not any(mark in match.group(1) for mark in ("<", "*", "{", "...")):
                yield match.group(1)


def path_exists(root, path):
    target = root / path
    return target.exists() or any(target.parent.glob(target.name + ".*"))


def conformance_areas(root):
    path = root / "conformance" / "CMakeLists.txt"
    text = path.read_text() if path.is_file() else ""
    return set(re.findall(r"cujit_conformance\(\s*(conformance_\w+)", text))


def field_tables(text):
    """(line number, producer paths or None, field names) of every field table."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not re.match(r"^\|\s*field\s*\|", line, re.I):
            continue
        producers = None
        paragraph = []
        back = index - 1
        while back >= 0 and lines[back].strip() == "":
            back -= 1
        marker = re.match(r"^\s*<!--\s*json-fields:\s*(.*?)\s*-->", lines[back]) if back >= 0 else None
        if marker:
            producers = marker.group(1).split()
        else:
            while back >= 0 and lines[back].strip() and not lines[back].startswith(("#", "|", "```")):
                paragraph.insert(0, lines[back])
                back -= 1
            named = [span for span in code_spans(" ".join(paragraph))
                     if re.match(r"^[\w./-]+\.(?:cpp|hpp|py)$", span)]
            producers = named or None
        names = []
        for row in lines[index + 2:]:
            if not row.startswith("|"):
                break
            first = row.split("|")[1]
            names += [(index + 3 + len(names), span) for span in code_spans(first)
                      if re.match(r"^[\w.-]+$", span)]
        yield index + 1, producers, [name for _, name in names]


def quoted_strings(paths):
    strings = set()
    for path in paths:
        if path.is_file():
            strings.update(re.findall(r"[\"']([^\"'\n]{1,80})[\"']", path.read_text(errors="replace")))
    return strings


# --- the check --------------------------------------------------------------------------

def check(root, cujit):
    command = CommandLine(cujit)
    options, macros, read = known_names(root)
    presets = presets_of(root)
    areas = conformance_areas(root)
    all_strings = None
    problems = []
    architecture = root / "docs" / "architecture.md"
    if architecture.is_file():
        listed = set(re.findall(r"`(conformance_\w+)`", architecture.read_text()))
        problems += [f"docs/architecture.md: the area {area} (conformance/CMakeLists.txt) is "
                     "not in its table of areas" for area in sorted(areas - listed)]
    for doc in docs_of(root):
        if not doc.is_file():
            continue
        where = doc.relative_to(root)
        text = doc.read_text()
        for number, rest in command_mentions(text):
            problems += [f"{where}:{number}: {problem}" for problem in command.problems(rest)]
        # GitHub Actions repository variables (`vars.CUJIT_X`) in a CI example are the
        # example's own, not cujit's.
        ci_variables = set(re.findall(r"\bvars\.(CUJIT_\w+)", text))
        for number, line in enumerate(text.splitlines(), 1):
            for name in NAME.findall(line):
                if name not in options | macros | read | ci_variables:
                    problems.append(f"{where}:{number}: {name} is not a CMake option or cache "
                                    "variable, not a macro the build defines, and no source reads it")
        for number, line in enumerate(text.splitlines(), 1):
            for path in tree_paths(line):
                if not path_exists(root, path):
                    problems.append(f"{where}:{number}: `{path}` does not exist")
            for area in re.findall(r"`(conformance_[a-z_]+)`", line):
                if area not in areas:
                    problems.append(f"{where}:{number}: {area} is no conformance area "
                                    "(cujit_conformance in conformance/CMakeLists.txt)")
        for number, kind, name in preset_mentions(text):
            if name not in presets[kind]:
                problems.append(f"{where}:{number}: no {kind} preset `{name}` in CMakePresets.json")
        for number, producers, names in field_tables(text):
            if producers:
                strings = quoted_strings(root / producer for producer in producers)
                source = ", ".join(producers)
            else:
                if all_strings is None:
                    all_strings = quoted_strings(source_files(root))
                strings, source = all_strings, "any source"
            for name in names:
                parts = [name] if name in strings else name.split(".")
                missing = [part for part in parts if part not in strings]
                if missing:
                    problems.append(f"{where}:{number}: field `{name}` of the table is not a "
                                    f"quoted string in {source}")
    return problems


def self_test(root, cujit):
    """Plants one mistake of each kind in a copy of the docs and checks that each is caught."""
    plants = {
        "command": ("Run `cujit frobnicate` first.", "no such command"),
        "flag": ("```sh\nbuild/default/cli/cujit run --no-such-flag\n```", "--no-such-flag"),
        "action": ("Then `cujit cache polish`.", "no such action"),
        "variable": ("Set CUJIT_NO_SUCH_VARIABLE=1.", "CUJIT_NO_SUCH_VARIABLE"),
        "preset": ("Configure with `cmake --preset nosuch`.", "preset `nosuch`"),
        "area": ("The area `conformance_nosuch` tests it.", "conformance_nosuch is no"),
        "path": ("See `ci/no_such_script.sh`.", "`ci/no_such_script.sh` does not exist"),
        "field": ("<!-- json-fields: bench/support/run_record.cpp -->\n| field | value |\n"
                  "|---|---|\n| `no_such_field` | x |", "`no_such_field`"),
    }
    baseline = check(root, cujit)
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch)
        for path in ["CMakeLists.txt", "CMakePresets.json", "README.md"]:
            (copy / path).write_text((root / path).read_text())
        for directory in ("cmake", "docs", "ci", "bench/support", "conformance"):
            (copy / directory).mkdir(parents=True, exist_ok=True)
        for path in list((root / "cmake").glob("*.cmake")) + list((root / "docs").glob("*.md")):
            (copy / path.relative_to(root)).write_text(path.read_text())
        (copy / "conformance/CMakeLists.txt").write_text(
            (root / "conformance/CMakeLists.txt").read_text())
        (copy / "bench/support/run_record.cpp").write_text(
            (root / "bench/support/run_record.cpp").read_text())
        original = (copy / "README.md").read_text()
        for kind, (planted, expected) in plants.items():
            (copy / "README.md").write_text(original + "\n" + planted + "\n")
            found = [problem for problem in check(copy, cujit) if expected in problem]
            print(f"check_docs self-test: planted {kind}: "
                  f"{'caught: ' + found[0] if found else 'NOT caught'}")
            if not found:
                failures.append(kind)
    if failures:
        print(f"check_docs self-test: FAILED, not caught: {', '.join(failures)}")
        return 1
    # The copy lacks most sources, so its clean run is not a verdict; the tree's own is.
    print(f"check_docs self-test: every planted mistake was caught "
          f"(the tree itself has {len(baseline)} problem(s))")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--cujit", type=Path, required=True, help="the built cujit command")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if not args.cujit.is_file():
        print(f"check_docs: {args.cujit} is not built", file=sys.stderr)
        return 2
    if args.self_test:
        return self_test(args.root.resolve(), args.cujit)
    problems = check(args.root.resolve(), args.cujit)
    for problem in problems:
        print(problem)
    print(f"check_docs: {len(problems)} thing(s) the docs name do not exist" if problems
          else "check_docs: every command, flag, variable, preset, area, path and field "
          "the docs name exists")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
