#!/usr/bin/env python3
"""Parameterised tests keep stable, readable names and values between runs.

GoogleTest writes each parameter value into test listings and JUnit XML (value_param); a
parameter type without a printer comes out as a raw memory dump with pointers in it, which
changes every run, so CI dashboards see new test cases each time. This lists every test of
each conformance executable twice (two processes, so addresses differ) and fails naming
each raw dump, each case whose name or value differs between the runs and each duplicate.

    ci/check_test_names.py EXECUTABLE...   check the executables' listings
    ci/check_test_names.py --self-test     show that each kind of problem is caught
"""
import re
import subprocess
import sys

RAW_DUMP = re.compile(r"\d+-byte object <")


def cases(listing):
    """[(suite.test, value or type description)] from `--gtest_list_tests` output."""
    out, suite = [], None
    for line in listing.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split("#", 1)[0].strip()
            suite_note = line.split("#", 1)[1].strip() if "#" in line else ""
            continue
        name, _, note = line.strip().partition("#")
        out.append((f"{suite}{name.strip()}", (suite_note + " " + note.strip()).strip()))
    return out


def problems(label, first, second):
    found = []
    for name, value in first:
        if RAW_DUMP.search(value):
            found.append(f"{label}: {name}: parameter printed as raw memory ({value[:80]}...): give its type a PrintTo")
    if first != second:
        changed = sorted(set(first) ^ set(second))
        found.append(f"{label}: listing differs between two runs, e.g. {changed[:3]}")
    names = [name for name, _ in first]
    for name in sorted({n for n in names if names.count(n) > 1}):
        found.append(f"{label}: test {name} is listed twice")
    return found


def listing(executable):
    result = subprocess.run([executable, "--gtest_list_tests"], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{executable} --gtest_list_tests exited {result.returncode}: {result.stderr[-500:]}")
    return result.stdout


def self_test():
    good = "Cells/LinkMatrix.\n  Links/0  # GetParam() = ptx nvjitlink\n"
    dump = "Cells/LinkMatrix.\n  Links/0  # GetParam() = 16-byte object <B0-BF 23-D7 41-56 00-00>\n"
    other = "Cells/LinkMatrix.\n  Links/0  # GetParam() = 16-byte object <C0-BF 23-D7 41-56 00-00>\n"
    twice = good + "  Links/0  # GetParam() = ptx nvjitlink\n"
    checks = [
        ("a printed value passes", problems("x", cases(good), cases(good)) == []),
        ("a raw dump is caught", any("raw memory" in p for p in problems("x", cases(dump), cases(dump)))),
        ("a changing value is caught", any("differs" in p for p in problems("x", cases(dump), cases(other)))),
        ("a duplicate is caught", any("twice" in p for p in problems("x", cases(twice), cases(twice)))),
    ]
    failed = [what for what, ok in checks if not ok]
    for what in failed:
        print(f"self-test failed: {what}", file=sys.stderr)
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    found = []
    for executable in argv:
        label = executable.rsplit("/", 1)[-1]
        try:
            found += problems(label, cases(listing(executable)), cases(listing(executable)))
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
            found.append(f"{label}: {error}")
    for problem in found:
        print(problem, file=sys.stderr)
    print(f"check_test_names: {len(argv)} executables, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
