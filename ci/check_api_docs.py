#!/usr/bin/env python3
"""Checks that every public declaration in core/include/cujit/*.hpp has a reference comment.

Runs Doxygen over the public headers with docs/Doxyfile.in's settings plus
WARN_IF_UNDOCUMENTED = YES and WARN_AS_ERROR = FAIL_ON_WARNINGS (XML into a temporary directory), and
lists the undocumented declarations header by header. Without Doxygen it says so and exits
77, which CTest counts as skipped (ci/setup.sh installs doxygen).

Doxygen reports a member only once its class or namespace is documented, so a header's
count can grow as its outer declarations get their comments; and it never reports a
namespace itself, so this script does: every namespace (but `detail`) needs a comment in
at least one header.

Usage:
    ci/check_api_docs.py [--root DIR] [--doxygen PATH]
    ci/check_api_docs.py --self-test     show that an undocumented declaration is caught
"""

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIPPED = 77
REPO = Path(__file__).resolve().parent.parent


def doxygen_config(root, scratch):
    template = (REPO / "docs" / "Doxyfile.in").read_text()
    config = (template.replace("@PROJECT_SOURCE_DIR@", str(root))
              .replace("@PROJECT_VERSION@", "check")
              .replace("@CUJIT_DOXYGEN_OUTPUT@", str(scratch)))
    return config + "\n".join([
        "", "GENERATE_HTML = NO", "GENERATE_LATEX = NO", "GENERATE_XML = YES",
        "WARN_IF_UNDOCUMENTED = YES", "WARN_AS_ERROR = FAIL_ON_WARNINGS",
        f"WARN_LOGFILE = {scratch}/warnings.log", ""])


def undocumented(root, doxygen):
    """Doxygen's exit status and its warnings, by header."""
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run([doxygen, "-"], input=doxygen_config(root, scratch), text=True,
                                capture_output=True, timeout=300, check=False)
        log = Path(scratch, "warnings.log")
        lines = log.read_text().splitlines() if log.is_file() else []
    by_header = collections.defaultdict(list)
    for line in lines + result.stderr.splitlines():
        match = re.match(r"^(.*?/include/cujit/[\w.]+):(\d+): (?:warning|error): (.*)$", line)
        if match:
            by_header[Path(match.group(1)).name].append(f"{match.group(2)}: {match.group(3)}")
        elif line.strip() and "warning" in line:
            by_header["(doxygen)"].append(line.strip())
    return result.returncode, by_header


def undocumented_namespaces(root):
    """{header: [warning]} for namespaces that no header documents."""
    declared, documented = {}, set()
    for header in sorted((root / "core" / "include" / "cujit").glob("*.hpp")):
        lines = header.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            match = re.match(r"^\s*namespace ([\w:]+) \{", line)
            if not match or match.group(1).split("::")[-1] == "detail":
                continue
            name = match.group(1)
            declared.setdefault(name, (header.name, number))
            before = next((text.strip() for text in reversed(lines[:number - 1]) if text.strip()), "")
            if before.startswith("///") or before.endswith("*/"):
                documented.add(name)
    found = collections.defaultdict(list)
    for name, (header, number) in declared.items():
        if name not in documented:
            found[header].append(f"{number}: namespace {name} is not documented in any header "
                                 "(Doxygen checks none of its functions until it is)")
    return found


def report(status, by_header):
    for header in sorted(by_header):
        warnings = sorted(set(by_header[header]), key=lambda text: int(text.split(":")[0])
                          if text.split(":")[0].isdigit() else 0)
        print(f"{header}: {len(warnings)} undocumented or badly documented declaration(s)")
        for warning in warnings:
            print(f"  {header}:{warning}")
    total = sum(len(set(warnings)) for warnings in by_header.values())
    if status != 0 or total:
        print(f"check_api_docs: {total} warning(s) in {len(by_header)} header(s)"
              f"{'' if total else f' (doxygen exited {status})'}")
        return 1
    print("check_api_docs: every public declaration is documented")
    return 0


def self_test(doxygen):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        headers = root / "core" / "include" / "cujit"
        headers.mkdir(parents=True)
        (headers / "documented.hpp").write_text(
            "#pragma once\n/// \\file\n/// A documented header.\n\n/// The namespace.\n"
            "namespace cujit {\n/// Adds one.\n/// \\throws nothing\nint add_one(int x);\n}\n")
        status, found = undocumented(root, doxygen)
        if status != 0 or found:
            print(f"check_api_docs self-test: a documented header was reported: {dict(found)}")
            return 1
        (headers / "undocumented.hpp").write_text(
            "#pragma once\n/// \\file\n/// A header.\n\nnamespace cujit {\nint add_two(int x);\n}\n")
        status, found = undocumented(root, doxygen)
        caught = [warning for warning in found.get("undocumented.hpp", []) if "add_two" in warning]
        if status == 0 or not caught:
            print(f"check_api_docs self-test: an undocumented function was NOT caught "
                  f"(exit {status}, {dict(found)})")
            return 1
        print(f"check_api_docs self-test: caught undocumented.hpp:{caught[0]}")
        (headers / "hidden.hpp").write_text(
            "#pragma once\nnamespace cujit::hidden {\nint add_three(int x);\n}\n")
        hidden = undocumented_namespaces(root).get("hidden.hpp", [])
        if not hidden:
            print("check_api_docs self-test: an undocumented namespace was NOT caught")
            return 1
        print(f"check_api_docs self-test: caught hidden.hpp:{hidden[0]}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO)
    parser.add_argument("--doxygen", default=shutil.which("doxygen"))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if not args.doxygen:
        print("check_api_docs: skipped: doxygen is not installed (ci/setup.sh installs it)")
        return SKIPPED
    if args.self_test:
        return self_test(args.doxygen)
    status, by_header = undocumented(args.root.resolve(), args.doxygen)
    for header, warnings in undocumented_namespaces(args.root.resolve()).items():
        by_header[header] += warnings
    return report(status, by_header)


if __name__ == "__main__":
    sys.exit(main())
