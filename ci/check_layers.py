#!/usr/bin/env python3
"""The core's include rule: core/src is grouped by pipeline stage, and a stage includes
only itself and the stages before it:

    support < code < cache < driver < compile < link < graph < jit

Public headers (core/include/cujit) belong to a stage too (STAGE_OF_HEADER) and follow the
same rule; they never include core/src; each has its conformance/test_<header>.cpp. Exit 1
naming every include (or missing test) that breaks the rule.

    ci/check_layers.py [--root DIR]     check a tree (default: this repository)
    ci/check_layers.py --self-test      show that a breaking include is caught
"""
import argparse
import pathlib
import re
import sys
import tempfile

from source_walk import source_files

STAGES = ["support", "code", "cache", "driver", "compile", "link", "graph", "jit"]

# Every public header and the stage that owns it. A new header must be added here: the
# check fails on a header it does not know.
STAGE_OF_HEADER = {
    "error.hpp": "support",
    "environment.hpp": "support",
    "diagnostics.hpp": "support",
    "toolkit.hpp": "support",
    "vendor_time.hpp": "support",
    "format.hpp": "code",
    "arch.hpp": "code",
    "linkable_code.hpp": "code",
    "cache_key.hpp": "cache",
    "build_cache.hpp": "cache",
    "device.hpp": "driver",
    "module.hpp": "driver",
    "program.hpp": "compile",
    "compile_cache.hpp": "compile",
    "signature.hpp": "compile",
    "abi.hpp": "compile",
    "linker.hpp": "link",
    "link_options.hpp": "link",
    "graph_node.hpp": "graph",
    "graph.hpp": "graph",
    "link_provider.hpp": "jit",
    "kernel_builder.hpp": "jit",
    "nrt.hpp": "jit",
    "reduce.hpp": "jit",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def stage_of_include(name):
    """The stage an #include "name" refers to, or None for files outside the core."""
    parts = name.split("/")
    if len(parts) == 2 and parts[0] == "cujit":
        return STAGE_OF_HEADER.get(parts[1], "unknown public header")
    if len(parts) == 2 and parts[0] in STAGES:
        return parts[0]
    return None


def check(root):
    problems = []
    core = root / "core"
    sources = [(p, p.relative_to(core / "src").parts[0])
               for p in source_files(root, ["core/src"], {".cpp", ".hpp"})]
    headers = []
    for p in sorted((core / "include" / "cujit").glob("*.hpp")):
        stage = STAGE_OF_HEADER.get(p.name)
        if stage is None:
            problems.append(f"{p.relative_to(root)}: public header not in STAGE_OF_HEADER "
                            f"(ci/check_layers.py): say which stage owns it")
            continue
        headers.append((p, stage))
    for path, stage in sources + headers:
        rel = path.relative_to(root)
        if stage not in STAGES:
            problems.append(f"{rel}: '{stage}' is not a stage folder ({', '.join(STAGES)})")
            continue
        public = (path, stage) in headers
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            if name.endswith(".def") and name.startswith("cujit/"):
                continue  # device-side tables shipped with the core (core/device)
            target = stage_of_include(name)
            if public and not name.startswith("cujit/"):
                problems.append(f'{rel}: public header includes "{name}" (core/src is private)')
            elif target == "unknown public header":
                problems.append(f'{rel}: includes "{name}", a header not in STAGE_OF_HEADER')
            elif target is not None and STAGES.index(target) > STAGES.index(stage):
                problems.append(f'{rel} ({stage}) includes "{name}" ({target}), a later stage')
    for path, _ in headers:
        test = root / "conformance" / f"test_{path.stem}.cpp"
        if not test.is_file():
            problems.append(f"{path.relative_to(root)}: no {test.relative_to(root)}")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "core/src/code").mkdir(parents=True)
        (root / "core/src/link").mkdir(parents=True)
        (root / "core/include/cujit").mkdir(parents=True)
        (root / "core/src/link/linker.cpp").write_text('#include "code/x.hpp"\n#include "cujit/format.hpp"\n')
        (root / "core/include/cujit/format.hpp").write_text("#pragma once\n")
        (root / "conformance").mkdir()
        (root / "conformance/test_format.cpp").write_text("")
        assert check(root) == [], check(root)
        (root / "core/src/code/format.cpp").write_text('#include "link/link_session.hpp"\n')
        (root / "core/include/cujit/arch.hpp").write_text('#include "cujit/linker.hpp"\n')
        (root / "core/include/cujit/new.hpp").write_text("#pragma once\n")
        (root / "core/include/cujit/linkable_code.hpp").write_text('#include "support/hash.hpp"\n')
        found = "\n".join(check(root))
        for expected in ['code/format.cpp (code) includes "link/link_session.hpp" (link)',
                         'arch.hpp (code) includes "cujit/linker.hpp" (link)',
                         "new.hpp: public header not in STAGE_OF_HEADER",
                         'linkable_code.hpp: public header includes "support/hash.hpp"',
                         "arch.hpp: no conformance/test_arch.cpp"]:
            assert expected in found, f"not caught: {expected}\n{found}"
    print("check_layers self-test: every breaking include was caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for problem in problems:
        print(problem)
    print(f"check_layers: {len(problems)} include(s) break the stage order" if problems
          else "check_layers: every include follows the stage order")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
