"""`qex resume [queue]` starts the queue again; `qex resume lock NAME` gives a lock back."""

from __future__ import annotations

from typing import Any

import click

from qex.cli.common import get_paths
from qex.cli.pause_core import QUEUE_RUNS_LINE, lock_free_line, print_state_json


def _resume(target: dict[str, Any]) -> dict[str, Any]:
    from qex.cli.reach import open_connection, require

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        require(conn, "pause", "resume a pause")
        return conn.resume(target)


def _queue(as_json: bool) -> None:
    answer = _resume({"kind": "queue"})
    if as_json:
        print_state_json(answer)
    else:
        click.echo(QUEUE_RUNS_LINE)


@click.group("resume", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the remaining pauses as JSON.")
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> None:
    """End a pause. With no word, the queue starts again (the same as `qex resume queue`)."""
    if ctx.invoked_subcommand is None:
        _queue(as_json)


@command.command("queue")
@click.option("--json", "as_json", is_flag=True, help="Print the remaining pauses as JSON.")
def resume_queue(*, as_json: bool) -> None:
    """Start the queue again; the jobs that waited start as capacity allows."""
    _queue(as_json)


@command.command("lock")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the remaining pauses as JSON.")
def resume_lock(*, name: str, as_json: bool) -> None:
    """Give the lock NAME back; the next job that needs it takes it."""
    answer = _resume({"kind": "lock", "name": name})
    if as_json:
        print_state_json(answer)
    else:
        click.echo(lock_free_line(name))
