"""`--cwd [DIR]` and `--under [DIR]`, shared by `qex list` and `qex clean`.

The value is optional: `--cwd` alone means the current directory, which is the form an
agent that lost an id types (`qex list --cwd`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from qex.cli.path_text import DIR

F = TypeVar("F", bound=Callable[..., Any])


def directory_options(func: F) -> F:
    func = click.option(
        "--under", "under_dir", is_flag=False, flag_value=".", default=None, metavar="[DIR]",
        type=DIR,
        help="Only jobs that ran in DIR or below it (no DIR: here).",
    )(func)
    return click.option(
        "--cwd", "cwd_dir", is_flag=False, flag_value=".", default=None, metavar="[DIR]",
        type=DIR,
        help="Only jobs that ran in DIR itself (no DIR: here).",
    )(func)
