"""Job ids and names for click's shell completion (`qex.cli.complete_jobs` reads them).

A Tab press is answered without click where it can be (`qex.cli.fastcomplete`); these are
for click's own completion, which answers the rest. Other commands attach them to their id
arguments: `@click.argument("job", shell_complete=complete_ids)` (or `complete_active`,
`complete_queued`).
"""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from qex.cli import complete_jobs


def _items(kind: str, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(value, help=text)
            for value, text in complete_jobs.offered_for(kind, incomplete)]


def complete_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return _items("ids", incomplete)


def complete_active(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return _items("active", incomplete)


def complete_queued(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return _items("queued", incomplete)
