"""The bytes that the files under a directory hold: what `qex du` counts and what `qex clean`
says it freed. Plain `os`, so the lean `clean` can size a job's directory without `pathlib`."""

from __future__ import annotations

import os


def tree_bytes(path: str | os.PathLike[str]) -> int:
    """The sizes of the files under `path` added up, links not followed (a link counts as
    itself); 0 when `path` is not a directory, or is gone. A file that goes while it is
    walked counts nothing."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total
