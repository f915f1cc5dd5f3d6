"""The one walk over the source tree that the CI checks share (check_layers.py,
check_regex.py, check_docs.py, run_docs.py): every regular file under the given folders
whose name ends in one of the given suffixes, sorted within each folder, folders in the
order given. A folder that does not exist yields nothing (a check's self-test tree holds
only some of them)."""
import pathlib


def source_files(root, folders, suffixes):
    """Yields the paths (under `root`) of the files a check reads."""
    root = pathlib.Path(root)
    for folder in folders:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix in suffixes and path.is_file():
                yield path
