"""Small helpers every command uses: paths, config, one-sentence errors, JSON output.

Kept light on purpose: it is imported by every command, including the fast read paths.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no `typing`, and `qex.store.paths` (pathlib) only in `get_paths`
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

    # Only for the annotation: the config model costs ~15 ms to import, and the fast read
    # paths (`qex status <id> --json`) never load a config.
    from qex.core.config import Config
    from qex.store.paths import Paths


def die(message: str, code: int) -> NoReturn:
    """One sentence on stderr, prefixed `qex:`, then exit with the documented code."""
    warn(message)
    sys.exit(code)


def warn(message: str) -> None:
    # Plain writes, not click.echo: the fast read paths never import click.
    sys.stdout.flush()
    sys.stderr.write(f"qex: {message}\n")
    sys.stderr.flush()


def print_warnings(answer: Mapping[str, Any]) -> None:
    """The coordinator's warning on a submit answer, as `qex: ...` lines."""
    from qex.core.names import printable

    warning = answer.get("warning")
    if isinstance(warning, str) and warning.strip():
        for line in printable(warning).splitlines():
            if line.strip():
                warn(line)


def canonical_dir(text: str) -> str:
    """A `--cwd`/`--under` directory resolved as a submission resolves its own working
    directory (absolute, `~` expanded, symlinks resolved), for `job_filters`."""
    import os

    return os.path.realpath(os.path.expanduser(text))


def get_paths(code: int = 1) -> Paths:
    from qex.store.paths import PathError, Paths

    try:
        return Paths.from_env()
    except PathError as exc:
        die(str(exc), code)


def load_config(paths: Paths, code: int = 1) -> Config:
    """The config in force; a bad file is one clear error and the given exit code."""
    from qex.core.config import ConfigError
    from qex.store.config_file import load_config as _load

    try:
        config = _load(paths)
    except ConfigError as exc:
        die(str(exc), code)
    for note in config.notes:
        warn(note)
    return config


def print_json(data: Any) -> None:
    """One indented JSON document on stdout (`qex.core.jsontext`, which spares `import json`)."""
    from qex.core.jsontext import dumps

    sys.stdout.write(dumps(data) + "\n")
    sys.stdout.flush()
