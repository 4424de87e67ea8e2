"""`qex info`: the coordinator, the load against the budget, other users, and whether the
queue is healthy. The one safe way to find the coordinator's pid: never search `ps`.
The body is `qex.cli.info_core`, which the fast path calls too."""

from __future__ import annotations

import sys

import click


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object.")
@click.option("--no-start", is_flag=True,
              help="Ask a coordinator that runs, and start none; exit 1 when none runs.")
def command(*, as_json: bool, no_start: bool) -> None:
    """Show the coordinator (pid, version), the jobs running and queued, the cores and the
    memory in use of the budget, other users, the health of the queue, pauses, pools and
    whether memory limits are enforced."""
    from qex.cli.info_core import show_info

    code = show_info(as_json=as_json, no_start=no_start)
    if code:
        sys.exit(code)
