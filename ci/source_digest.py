#!/usr/bin/env python3
"""The digest of the code a benchmark run measures, from the files themselves.

    ci/source_digest.py                 the digest of this working tree
    ci/source_digest.py --at COMMIT     the digest the same files have at COMMIT (git)
    ci/source_digest.py --self-test     show that the two agree, and what changes them

A run record's commit can be wrong: a copy of the tree on another machine (the GPU machine)
is a repository of its own, whose HEAD is not the project's, and CUJIT_GIT_COMMIT is only as
good as whoever sets it. The digest needs no git metadata: ci/bench.sh records it
(CUJIT_SOURCE_DIGEST, context.cujit_source_digest), and `--at COMMIT` says afterwards
whether a result came from that commit's code. It covers what the benchmarks build and run
(SOURCES): the library, the benchmarks, the build files and the scenarios' sources; not the
docs, tests, reports or CI scripts. Untracked files in those folders count: they are built.

The digest: SHA-256 over each file, in order of its path relative to the root, as the path,
its size and its bytes (a symbolic link as its target), each field ended by a NUL, so that no
two different trees share a byte stream. Printed as its first 16 hex digits.
"""
import argparse
import hashlib
import os
import stat
import subprocess
import sys
import tempfile

SOURCES = ("core", "bench", "cmake", "scenarios", "CMakeLists.txt", "CMakePresets.json")
# Never source: Python's byte-code caches, which running the scripts leaves beside them.
SKIPPED_DIRS = {"__pycache__"}
DIGITS = 16


def _add(digest, path, data):
    digest.update(path.encode() + b"\0" + str(len(data)).encode() + b"\0" + data + b"\0")


def _tree_files(root):
    """{relative path: bytes} of SOURCES under `root`."""
    files = {}
    for source in SOURCES:
        top = os.path.join(root, source)
        if os.path.islink(top) or os.path.isfile(top):
            files[source] = _read(top)
            continue
        for directory, dirs, names in os.walk(top):
            kept = []
            for d in dirs:
                full = os.path.join(directory, d)
                if os.path.islink(full):  # recorded as a link, as git records it
                    files[os.path.relpath(full, root)] = _read(full)
                elif d not in SKIPPED_DIRS:
                    kept.append(d)
            dirs[:] = kept
            for name in names:
                if not name.endswith(".pyc"):
                    path = os.path.join(directory, name)
                    files[os.path.relpath(path, root)] = _read(path)
    return files


class DigestError(Exception):
    """A file or commit the digest cannot be taken of, named."""


def _read(path):
    if os.path.islink(path):
        return os.readlink(path).encode()
    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would hang the read, a device worse
        raise DigestError(f"{path} is not a regular file")
    with open(path, "rb") as f:
        return f.read()


def _git(root, args, stdin=None):
    done = subprocess.run(["git", "-C", root, *args], input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise DigestError(f"git {' '.join(args[:2])} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _commit_files(root, commit):
    """{relative path: bytes} of SOURCES in `commit` of the repository at `root`, as stored:
    a checkout writes the same bytes while no .gitattributes filter (end-of-line conversion,
    ident, LFS) applies to these folders, as none does here."""
    # --end-of-options: a value starting with "-" is a revision, never an option.
    sha = _git(root, ["rev-parse", "--verify", "--end-of-options", commit + "^{commit}"]).decode().strip()
    listing = _git(root, ["ls-tree", "-r", "-z", "--full-tree", sha, "--", *SOURCES])
    entries = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, blob = meta.split(b" ")
        if kind == b"blob":
            if b"\n" in path:
                raise DigestError(f"{commit} holds a path with a newline: {path!r}")
            entries.append((path.decode(errors="surrogateescape"), mode))
    if not entries:
        raise DigestError(f"{commit} holds none of {', '.join(SOURCES)}")
    requests = "".join(f"{sha}:{path}\n" for path, _ in entries).encode(errors="surrogateescape")
    batch = _git(root, ["cat-file", "--batch"], stdin=requests)
    files, at = {}, 0
    for path, mode in entries:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split(b" ")
        if len(header) != 3:
            raise DigestError(f"git cat-file has no blob for {sha}:{path}: {batch[at:header_end]!r}")
        size = int(header[2])
        files[path] = batch[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1  # the content, then a newline
    return files


def digest_of(files):
    digest = hashlib.sha256()
    for path in sorted(files):
        _add(digest, path, files[path])
    return digest.hexdigest()[:DIGITS]


def tree_digest(root):
    return digest_of(_tree_files(root))


def commit_digest(root, commit):
    return digest_of(_commit_files(root, commit))


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def git(*args):
            subprocess.run(["git", "-C", root, *args], check=True, capture_output=True)

        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)) or root, exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)

        git("init", "-q")
        write("core/src/a.cpp", "int a;\n")
        write("bench/b.cpp", "int b;\n")
        write("CMakeLists.txt", "project(x)\n")
        write("docs/readme.md", "docs\n")
        os.symlink("a.cpp", os.path.join(root, "core/src/link.cpp"))
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
        first = tree_digest(root)
        assert first == commit_digest(root, "HEAD"), "a clean tree and its commit differ"
        write("docs/readme.md", "other docs\n")
        os.makedirs(os.path.join(root, "bench/__pycache__"))
        write("bench/__pycache__/m.cpython-311.pyc", "cache")
        assert tree_digest(root) == first, "a file outside the sources changed the digest"
        write("core/src/a.cpp", "int a = 1;\n")
        assert tree_digest(root) != first, "an edited source left the digest as it was"
        write("core/src/a.cpp", "int a;\n")
        write("core/src/new.cpp", "int n;\n")
        assert tree_digest(root) != first, "an untracked source left the digest as it was"
        os.remove(os.path.join(root, "core/src/new.cpp"))
        os.rename(os.path.join(root, "bench/b.cpp"), os.path.join(root, "bench/c.cpp"))
        assert tree_digest(root) != first, "a renamed source left the digest as it was"
        os.mkfifo(os.path.join(root, "core/src/pipe"))
        try:
            tree_digest(root)
            raise AssertionError("a FIFO among the sources was read")
        except DigestError as error:
            assert "not a regular file" in str(error), error
    print("source_digest: self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--at", metavar="COMMIT")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return 0
    try:
        if args.at is not None:
            if not args.at:
                raise DigestError("--at needs a commit")
            print(commit_digest(args.root, args.at))
        else:
            print(tree_digest(args.root))
    except (DigestError, OSError) as error:
        print(f"source_digest: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
