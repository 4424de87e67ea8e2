"""How qex starts a Python module of its own in a new process (`python -P -m <module>`).

`python -m` puts the working directory first on `sys.path`, so a `qex` directory in the
directory a process starts in (a user's home, where the systemd unit starts the
coordinator) would be imported in place of the installed package. `-P` (Python 3.11) keeps
the working directory off the path; `PYTHONPATH`, site-packages and editable installs are
unchanged. Every such start goes through `module_argv`. Pure: it only builds the argv.
"""

from __future__ import annotations

import sys


def module_argv(module: str, *args: str) -> list[str]:
    """The argv that runs `module` with this interpreter, safe from the working directory."""
    return [sys.executable, "-P", "-m", module, *args]


def runs_module(argv: list[str]) -> bool:
    """True when `argv` starts a module with `-m` (as `module_argv` writes it)."""
    return "-m" in argv[1:3]
