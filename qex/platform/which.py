"""`shutil.which` without `shutil`: the program that a name runs, found on a PATH.

Why not the standard library's: `shutil` imports `bz2`, `lzma` and `zlib` for its archive
functions, about 4 ms, and the coordinator needs a program's path at its first job (the
capability probe looks for `systemd-run`), which at a cold start is time that the first
submit waits for. The rule is the one `shutil.which` follows on POSIX: a name with a slash
is checked as it is; otherwise each PATH entry in order (an empty entry is the working
directory), each directory once, and the first executable file that is not a directory.
"""

from __future__ import annotations

import os


def which(name: str, path: str | None = None) -> str | None:
    """The path of the program `name` on `path` (default: this process's PATH), or None."""
    if os.path.dirname(name):
        return name if _runnable(name) else None
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    seen: set[str] = set()
    for directory in path.split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(candidate: str) -> bool:
    return os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate)
