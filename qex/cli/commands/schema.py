"""`qex schema NAME`: print the JSON Schema of one of qex's formats.

A program that reads `qex status --json` or `qex events --json` can validate against these
documents instead of guessing from examples; they are generated from the same model the
records are written from.
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
    from qex.cli.common import die
    from qex.core.names import visible
    from qex.core.schemas import SCHEMAS, render

    names = ", ".join(SCHEMAS)
    if name is None:
        die(f"name the format whose schema you want, one of: {names} (e.g. `qex schema status`)", 2)
    key = name.strip().lower()
    if key not in SCHEMAS:
        die(f"there is no schema called `{visible(name)}`; give one of: {names}", 2)
    click.echo(render(key))
