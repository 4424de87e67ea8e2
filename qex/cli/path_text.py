"""Text values that name a file or a directory: a Tab press offers paths for them.

The value stays plain text, as click's `str` gives it. qex opens and checks the path itself,
with its own message and exit code, where `click.Path` would refuse an unreadable file in
click's words first; only the completion changes. `qex.cli.fastgen` writes `file` or `dir`
for these into the tree of the fast completion (`qex.cli.complete_tree`).
"""

from __future__ import annotations

from typing import Any

import click


class PathText(click.types.StringParamType):
    """A `str` value completed as a file (`completes="file"`) or a directory (`"dir"`): the
    shell's own path completion, as for `click.Path`."""

    def __init__(self, completes: str) -> None:
        self.completes = completes

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(incomplete, type=self.completes)]


FILE = PathText("file")
DIR = PathText("dir")

#: The type of a text option by its metavar (`qex.core.job_fields`): paths complete as such.
BY_METAVAR = {"FILE": FILE, "DIR": DIR}
