#!/usr/bin/env python3
"""Docs checked by running them (issue 33): what README.md and docs/*.md tell a user to type
works, and what they say the code reads and prints is what it reads and prints.

ci/check_docs.py checks that the things the docs name exist; this runs them:

- **Command blocks.** Every shell block (```sh, bash, shell, console) carries a run tag after
  its language, one of
      ```sh cpu        run by Docs.CommandBlocksRun on every machine (CI included)
      ```sh gpu        run by Docs.GpuCommandBlocksRun (label gpu) in the GPU lane; skipped,
                       with the reason, without a device (failed under CUJIT_REQUIRE_GPU)
      ```sh not-run    slow (a full build, the main job, the GPU lane itself): not run, but
                       its commands are checked (below)
  A block without one is a failure. A run block runs with `bash -e -o pipefail` in a scratch
  directory that mirrors the source tree (symlinks; `build/default` and `build/gpu` are the
  build under test), with its own HOME, TMPDIR, OUT and CUJIT_CACHE_DIR, so that files it
  writes land in the scratch directory. Every block, run or not, has each `cujit <command>
  [action] [--flag]` checked against the built command's `--help` and each script it starts
  (`ci/x.sh`) checked to exist.
- **Environment.** Every variable that core/ or cli/ reads (`getenv("X")`,
  `secure_getenv("X")`, the env helper `environment::flag("X", ...)` and its kin, any quoted
  "CUJIT_X", the names a `getenv(variable)` loop goes over) is listed in the table of
  docs/cli.md's "Environment variables" section.
- **JSON.** Every subcommand whose `--help` offers `--json` has a row in docs/cli.md's
  `--json` table; every field a row lists is a quoted string of the code (cli/,
  scenarios/runner/); and the documents the CPU can make quickly are made: each has an
  integer `schema`, no top-level field the row (or the bundle's table in
  docs/scenario-format.md) leaves out, and, for a row with one form, every field it lists.

Usage:
    ci/run_docs.py --cujit build/default/cli/cujit            the CPU check (exit 1 naming each problem)
    ci/run_docs.py --cujit build/default/cli/cujit --gpu      the GPU blocks (exit 77 without a device)
    ci/run_docs.py --cujit build/default/cli/cujit --self-test
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_docs  # noqa: E402  (the command's help, the docs list, tree paths)
from source_walk import source_files  # noqa: E402

SKIP = 77
SHELL = {"sh", "bash", "shell", "console"}
TAGS = ("cpu", "gpu", "not-run")
FENCE = re.compile(r"^\s*```\s*([\w+-]*)[ \t]*(.*?)\s*$")
BLOCK_TIMEOUT = 60
# Where the code that reads the environment lives (the brief of issue 33: core/ and cli/).
ENV_FOLDERS = ("core", "cli")
ENV_SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh"}
ENV_HELPER = re.compile(r"\b(?:secure_getenv|getenv|environment::\w+|value_of|milliseconds_from)\(\s*\"([A-Z][A-Z0-9_]*)\"")
QUOTED_CUJIT = re.compile(r"\"(CUJIT_[A-Z0-9_]*[A-Z0-9])\"")
GETENV_VARIABLE = re.compile(r"\b(?:secure_getenv|getenv)\(\s*([a-z_][a-z0-9_]*)\s*\)")
# The documents the CPU makes in a few seconds, from committed inputs; the others (run,
# bench, conformance, merge, report) take minutes or a build's outputs and are checked here
# against the code only (their fields are checked by conformance/test_cli_conventions.cpp).
JSON_RUNS = {
    "info --json": [["info", "--json"]],
    "cache stats --json": [["cache", "stats", "--json"]],
    "cache path --json": [["cache", "path", "--json"]],
    "cache clear --json": [["cache", "clear", "--json"]],
    "conformance --list --json": [["conformance", "--list", "--json"]],
    "compare --json": [["compare", "reports/tests/golden/gate_base.json", "reports/tests/golden/gate_base.json",
                        "--json"]],
    "repro --json": [["repro", "scenarios/repro/c-abi-ltoirs-with-same-helper.json", "--json"],
                     ["repro", "--capture", "capture", "--json", "--", "true"]],
}
FIELD_SOURCES = ("cli", "scenarios/runner")


# --- blocks ---------------------------------------------------------------------------------

class Block:
    def __init__(self, doc, line, language, tags, body):
        self.doc, self.line, self.language, self.tags, self.body = doc, line, language, tags, body

    def where(self):
        return f"{self.doc}:{self.line}"


def blocks_of(root):
    """Every fenced block of README.md and docs/*.md."""
    for path in check_docs.docs_of(root):
        if not path.is_file():
            continue
        shown = path.relative_to(root)
        opened = None
        for number, line in enumerate(path.read_text().splitlines(), 1):
            fence = FENCE.match(line)
            if fence and opened is None:
                opened = Block(shown, number, fence.group(1).lower(), fence.group(2).split(), [])
            elif line.strip().startswith("```") and opened is not None:
                yield opened
                opened = None
            elif opened is not None:
                opened.body.append((number, line))


def shell_blocks(root):
    return [block for block in blocks_of(root) if block.language in SHELL]


def tag_problems(blocks):
    problems = []
    for block in blocks:
        tags = [tag for tag in block.tags if tag in TAGS]
        if len(tags) != 1:
            problems.append(f"{block.where()}: a shell block needs one run tag after its language "
                            f"(```{block.language} cpu|gpu|not-run), it has {block.tags or 'none'}")
    return problems


def static_problems(root, command, blocks):
    """The cujit commands and flags of every block, and the scripts it starts."""
    problems = []
    for block in blocks:
        for number, line in block.body:
            code = "" if line.lstrip().startswith("#") else re.split(r"\s#", line, 1)[0]
            for part in re.split(r"&&|\|\||;|\|", code):
                try:
                    words = shlex.split(part)  # VAR="a b" is one word
                except ValueError:
                    words = part.split()
                while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                    words.pop(0)  # VAR=value before the command
                if not words:
                    continue
                match = check_docs.COMMAND_LINE.match(" ".join(words))
                if match:
                    problems += [f"{block.doc}:{number}: {problem}"
                                 for problem in command.problems(match.group("rest"))]
                    continue
                script = check_docs.TREE_PATH.match(words[0])
                if script and not check_docs.path_exists(root, script.group(1)):
                    problems.append(f"{block.doc}:{number}: `{words[0]}` does not exist")
    return problems


def mirror(root, build, scratch):
    """A directory that looks like the source tree with the build under test in it."""
    for entry in root.iterdir():
        if entry.name in ("build", ".git", "cujit-out"):
            continue
        (scratch / entry.name).symlink_to(entry)
    (scratch / "build").mkdir()
    for preset in ("default", "gpu"):
        (scratch / "build" / preset).symlink_to(build)
    for own in ("home", "tmp", "out", "cache"):
        (scratch / own).mkdir()


def run_blocks(root, build, blocks):
    problems = []
    with tempfile.TemporaryDirectory(prefix="cujit-docs-") as directory:
        scratch = Path(directory)
        mirror(root, build, scratch)
        env = dict(os.environ, HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"),
                   OUT=str(scratch / "out"), CUJIT_CACHE_DIR=str(scratch / "cache"))
        for block in blocks:
            script = "\n".join(line for _, line in block.body) + "\n"
            try:
                result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=scratch,
                                        env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append(f"{block.where()}: the block ran past {BLOCK_TIMEOUT} s "
                                "(tag it not-run if it is meant to be slow)")
                continue
            shown = "\n".join((result.stdout + result.stderr).splitlines()[-12:])
            if result.returncode != 0:
                problems.append(f"{block.where()}: the block exited {result.returncode}:\n{shown}")
            else:
                print(f"run_docs: {block.where()}: ran ({len(block.body)} line(s)), exit 0")
    return problems


# --- environment ----------------------------------------------------------------------------

def environment_reads(root):
    """Variable name -> where it is read first (path:line)."""
    found = {}
    for path in source_files(root, ENV_FOLDERS, ENV_SUFFIXES):
        lines = path.read_text(errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            names = ENV_HELPER.findall(line) + QUOTED_CUJIT.findall(line)
            if GETENV_VARIABLE.search(line):
                # getenv(variable): the names it goes over are quoted in the lines just above.
                for above in lines[max(0, number - 4):number - 1]:
                    names += re.findall(r"\"([A-Z][A-Z0-9_]{2,})\"", above)
            for name in names:
                found.setdefault(name, f"{path.relative_to(root)}:{number}")
    return found


def listed_variables(root):
    """The variables in the first column of docs/cli.md's `## Environment variables` table."""
    text = (root / "docs" / "cli.md").read_text()
    section = text.split("\n## Environment variables\n", 1)
    listed = set()
    if len(section) < 2:
        return listed
    for line in section[1].split("\n## ", 1)[0].splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            listed.update(check_docs.code_spans(line.split("|")[1]))
    return listed


def environment_problems(root):
    listed = listed_variables(root)
    return [f"{where}: reads the environment variable {name}, which docs/cli.md's table of "
            "environment variables does not list: say what it takes and does"
            for name, where in sorted(environment_reads(root).items()) if name not in listed]


# --- JSON -----------------------------------------------------------------------------------

def top_level_spans(cell):
    """The code spans of a table cell outside parentheses: the top-level field names."""
    depth, spans, inside, current = 0, [], False, ""
    for char in cell:
        if inside:
            if char == "`":
                inside = False
                if depth == 0:
                    spans.append(current)
                current = ""
            else:
                current += char
        elif char == "`":
            inside = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
    return spans


def json_rows(root):
    """(command cell spans, fields, one form) of docs/cli.md's `--json` table."""
    path = root / "docs" / "cli.md"
    rows = []
    in_table = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if re.match(r"^\|\s*command\s*\|\s*fields\s*\|", line):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if in_table and not line.startswith("|---"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            commands = check_docs.code_spans(cells[0])
            fields = [span for span in top_level_spans(cells[1]) if re.match(r"^[a-z_]+$", span)]
            one_form = ";" not in re.sub(r"\([^)]*\)", "", cells[1])
            rows.append((number, commands, fields, one_form))
    return rows


def bundle_fields(root):
    """The top-level fields of the diagnostic bundle (docs/scenario-format.md's table)."""
    text = (root / "docs" / "scenario-format.md").read_text()
    table = text.split("<!-- json-fields: scenarios/runner/scenario_render.cpp -->", 1)
    if len(table) < 2:
        return set()
    fields = set()
    for line in table[1].strip().splitlines()[2:]:
        if not line.startswith("|"):
            break
        fields.update(span for span in check_docs.code_spans(line.split("|")[1]))
    return fields


def json_problems(root, build, command):
    problems = []
    rows = json_rows(root)
    strings = check_docs.quoted_strings(source_files(root, FIELD_SOURCES, {".cpp", ".hpp"}))
    documented_commands = set()
    for number, commands, fields, _ in rows:
        for spelled in commands:
            documented_commands.add(spelled.split()[0])
            problems += [f"docs/cli.md:{number}: {problem}" for problem in command.problems(spelled)]
        problems += [f"docs/cli.md:{number}: field `{field}` is no quoted string in {', '.join(FIELD_SOURCES)}"
                     for field in fields if field not in strings]
    for name in sorted(command.commands):
        flags, _ = command.details(name)
        if "json" in flags and name not in documented_commands:
            problems.append(f"docs/cli.md: `cujit {name} --json` has no row in the `--json` table")
    # A run whose row was renamed would silently stop: each must still find its row.
    spelled_rows = {spelled for _, commands, _, _ in rows for spelled in commands}
    problems += [f"docs/cli.md: the docs test makes `cujit {spelled}` (JSON_RUNS in ci/run_docs.py), "
                 "and the `--json` table has no row for it" for spelled in sorted(set(JSON_RUNS) - spelled_rows)]
    bundle = bundle_fields(root)
    if not bundle:
        problems.append("docs/scenario-format.md: no table of the bundle's fields after "
                        "<!-- json-fields: scenarios/runner/scenario_render.cpp -->")
    with tempfile.TemporaryDirectory(prefix="cujit-json-") as directory:
        scratch = Path(directory)
        env = dict(os.environ, CUJIT_CACHE_DIR=str(scratch / "cache"), HOME=str(scratch))
        for number, commands, fields, one_form in rows:
            for spelled in commands:
                for argv in JSON_RUNS.get(spelled, []):
                    argv = [str(root / arg) if arg.startswith(("scenarios/", "reports/")) else
                            str(scratch / arg) if arg == "capture" else arg for arg in argv]
                    shown = "cujit " + " ".join(argv)
                    result = subprocess.run([str(command.cujit), *argv], cwd=scratch, env=env,
                                            capture_output=True, text=True, timeout=120)
                    try:
                        document = json.loads(result.stdout)
                    except json.JSONDecodeError:
                        problems.append(f"docs/cli.md:{number}: `{shown}` printed no JSON document "
                                        f"(exit {result.returncode}): {result.stderr.strip()[-300:]}")
                        continue
                    if not isinstance(document.get("schema"), int):
                        problems.append(f"docs/cli.md:{number}: `{shown}` has no integer `schema`")
                    allowed = set(fields) | {"schema"}
                    if spelled == "repro --json" and "capture" not in argv[1]:
                        allowed |= bundle
                    problems += [f"docs/cli.md:{number}: `{shown}` prints the field `{key}`, which "
                                 "the docs do not list" for key in sorted(set(document) - allowed)]
                    if one_form:
                        problems += [f"docs/cli.md:{number}: `{shown}` has no field `{field}`, "
                                     "which the docs list" for field in fields if field not in document]
                    print(f"run_docs: `{shown}`: {len(document)} field(s) checked")
    return problems


# --- the check ------------------------------------------------------------------------------

def check(root, cujit, build, parts=("tags", "static", "run", "env", "json")):
    command = check_docs.CommandLine(cujit)
    blocks = shell_blocks(root)
    problems = []
    if "tags" in parts:
        problems += tag_problems(blocks)
    if "static" in parts:
        problems += static_problems(root, command, blocks)
    if "run" in parts:
        problems += run_blocks(root, build, [block for block in blocks if "cpu" in block.tags])
    if "env" in parts:
        problems += environment_problems(root)
    if "json" in parts:
        problems += json_problems(root, build, command)
    return problems


def device_reason(cujit):
    """None when `cujit info --json` sees a device, else why not."""
    result = subprocess.run([str(cujit), "info", "--json"], capture_output=True, text=True, timeout=120)
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        return f"`cujit info --json` printed no JSON (exit {result.returncode})"
    return None if info.get("devices") else (info.get("why_no_device") or "no CUDA device")


def gpu(root, cujit, build):
    # Under a CTest resource spec (ci/gpu.sh) the test is given one GPU: the blocks use it.
    allotted = os.environ.get("CTEST_RESOURCE_GROUP_0_GPUS", "")
    if allotted.startswith("id:"):
        os.environ["CUDA_VISIBLE_DEVICES"] = allotted[3:].split(",")[0]
    blocks = [block for block in shell_blocks(root) if "gpu" in block.tags]
    reason = device_reason(cujit)
    if reason is not None:
        if os.environ.get("CUJIT_REQUIRE_GPU", "") not in ("", "0", "false", "off", "no"):
            print(f"run_docs: CUJIT_REQUIRE_GPU is set and there is no device: {reason}")
            return 1
        print(f"SKIPPED: {len(blocks)} gpu block(s) of the docs need a CUDA device: {reason}")
        return SKIP
    problems = run_blocks(root, build, blocks)
    for problem in problems:
        print(problem)
    print(f"run_docs: {len(blocks)} gpu block(s), {len(problems)} problem(s)")
    return 1 if problems else 0


def planted_tree(root, scratch):
    """A tree whose docs are copies (to plant mistakes in) and everything else the real one."""
    for entry in root.iterdir():
        if entry.name not in ("docs", "README.md", "build", ".git"):
            (scratch / entry.name).symlink_to(entry)
    (scratch / "docs").mkdir()
    for entry in (root / "docs").iterdir():
        if entry.suffix == ".md":
            shutil.copy(entry, scratch / "docs" / entry.name)
        else:
            (scratch / "docs" / entry.name).symlink_to(entry)
    shutil.copy(root / "README.md", scratch / "README.md")


def self_test(root, cujit, build):
    """Plants one mistake of each kind in a copy of the docs and checks each is caught."""
    cli_doc = (root / "docs" / "cli.md").read_text()
    info_row = next(line for line in cli_doc.splitlines() if line.startswith("| `info --json`"))
    reads = environment_reads(root)
    variable = "CUJIT_COMPILE_WORKER_TIMEOUT" if "CUJIT_COMPILE_WORKER_TIMEOUT" in reads else sorted(reads)[0]
    plants = {
        # name: (file, how the text changes, the part that must catch it, what it says)
        "flag in a not-run block": (
            "README.md", lambda text: text + "\n```sh not-run\nbuild/default/cli/cujit info --no-such-flag\n```\n",
            "static", "--no-such-flag"),
        "command in a gpu block": (
            "README.md", lambda text: text + "\n```sh gpu\nbuild/gpu/cli/cujit frobnicate\n```\n",
            "static", "no such command"),
        "script in a block": (
            "README.md", lambda text: text + "\n```sh not-run\nci/no_such_script.sh --all\n```\n",
            "static", "ci/no_such_script.sh"),
        "failing cpu block": (
            "README.md", lambda text: text + "\n```sh cpu\nbuild/default/cli/cujit cache path --json | grep -q no_such_text\n```\n",
            "run", "exited 1"),
        "untagged block": (
            "README.md", lambda text: text + "\n```sh\nls\n```\n", "tags", "needs one run tag"),
        "undocumented variable": (
            "*", lambda text: text.replace(variable, "CUJIT_RENAMED"), "env", variable),
        "JSON field that is not printed": (
            "docs/cli.md", lambda text: text.replace(info_row, info_row.rstrip(" |") + ", `no_such_field` |"),
            "json", "`no_such_field`"),
        "JSON field printed and not listed": (
            "docs/cli.md", lambda text: text.replace(info_row, info_row.replace("`why_no_device`, ", "")),
            "json", "prints the field `why_no_device`"),
        "JSON field of another command": (
            "docs/cli.md", lambda text: text.replace(info_row, info_row.rstrip(" |") + ", `verdict` |"),
            "json", "has no field `verdict`"),
        "--json command without a row": (
            "docs/cli.md", lambda text: text.replace(info_row + "\n", ""),
            "json", "`cujit info --json` has no row"),
    }
    failures = []
    for name, (target, change, part, expected) in plants.items():
        with tempfile.TemporaryDirectory(prefix="cujit-docs-plant-") as directory:
            copy = Path(directory)
            planted_tree(root, copy)
            targets = check_docs.docs_of(copy) if target == "*" else [copy / target]
            for path in targets:
                path.write_text(change(path.read_text()))
            found = [problem for problem in check(copy, cujit, build, (part,)) if expected in problem]
        print(f"run_docs self-test: planted {name}: "
              f"{'caught: ' + found[0].splitlines()[0] if found else 'NOT caught'}")
        if not found:
            failures.append(name)
    if failures:
        print(f"run_docs self-test: FAILED, not caught: {', '.join(failures)}")
        return 1
    print("run_docs self-test: every planted mistake was caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--cujit", type=Path, required=True, help="the built cujit command")
    parser.add_argument("--build", type=Path, help="the build under test (default: the cujit's)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--gpu", action="store_true", help="run the gpu blocks")
    mode.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if not args.cujit.is_file():
        print(f"run_docs: {args.cujit} is not built", file=sys.stderr)
        return 2
    cujit = args.cujit.resolve()
    build = (args.build or cujit.parent.parent).resolve()
    root = args.root.resolve()
    if args.gpu:
        return gpu(root, cujit, build)
    if args.self_test:
        return self_test(root, cujit, build)
    problems = check(root, cujit, build)
    for problem in problems:
        print(problem)
    print(f"run_docs: {len(problems)} problem(s)" if problems else
          "run_docs: every cpu block ran, every block's commands exist, every variable read is "
          "documented, every JSON document matches its docs")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
