"""`qex du`: the disk space that qex holds, what `qex gc` would give back, and the largest
job records. Reads the disk only: no coordinator is asked or started. The body is
`qex.cli.du_core`, which the fast path calls too."""

from __future__ import annotations

import click


@click.command("du")
@click.option("--top", "top_n", type=click.IntRange(min=0), default=10, show_default=True,
              metavar="N", help="List the N largest job records.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def command(*, top_n: int, as_json: bool) -> None:
    """Show how much disk space the state directory uses, how much `qex gc` would free,
    and which job records are the largest."""
    from qex.cli.du_core import show_du

    show_du(top_n=top_n, as_json=as_json)
