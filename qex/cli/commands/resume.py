"""`qex resume [queue]` starts the queue again; `qex resume lock NAME` gives a lock back."""

from __future__ import annotations

from typing import Any

import click

from qex.cli.common import get_paths, print_json


def _resume(target: dict[str, Any]) -> dict[str, Any]:
    from qex.cli.reach import open_connection, require

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        require(conn, "pause", "resume a pause")
        return conn.resume(target)


def _json(answer: dict[str, Any]) -> None:
    print_json({"paused": bool(answer.get("queue")) or bool(answer.get("locks")),
                "queue": answer.get("queue"), "locks": answer.get("locks") or []})


def _queue(as_json: bool) -> None:
    answer = _resume({"kind": "queue"})
    if as_json:
        _json(answer)
    else:
        click.echo("the queue runs again")


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
    from qex.core.names import lock_shown

    answer = _resume({"kind": "lock", "name": name})
    if as_json:
        _json(answer)
    else:
        click.echo(f"the lock `{lock_shown(name)}` is free again; the next job that needs it "
                   "takes it")
