"""`qex schema NAME`: print the JSON Schema of one of qex's formats.

A program that reads `qex status --json` or `qex events --json` can validate against these
documents instead of guessing from examples; they are generated from the same model the
records are written from. The body is `qex.cli.schema_core`, which the fast path calls too.
"""

from __future__ import annotations

import click


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    from qex.core.schemas import SCHEMAS

    return [name for name in SCHEMAS if name.startswith(incomplete.lower())]


@click.command(name="schema")
@click.argument("name", required=False, shell_complete=_complete)
def command(name: str | None) -> None:
    """Print the JSON Schema (draft 2020-12) of a format: status, job, pipeline or event.

    status is the job record (status.json, `qex status --json`); job is a job file for
    `qex submit --job`; pipeline is a file for `qex pipeline`; event is one line of
    `qex events --json`.
    """
    from qex.cli.schema_core import show_schema

    show_schema(name)
