"""`qex pause`: say what is paused; `qex pause queue` stops new starts; `qex pause lock NAME`
takes a lock for a person. Running jobs always continue: a pause never loses work.

The fast path answers the plain forms through `qex.cli.pause_core`, which also holds the
sentences printed here; this body covers the rest (no coordinator yet, `--drain`, an older
coordinator, a `--for` to word)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from qex.cli.common import die, get_paths, warn
from qex.cli.pause_core import (
    already_paused_warning,
    lock_taken_line,
    print_state,
    still_running_warning,
)
from qex.core.states import Exit


def disk_pause_state(paths: Any, now: float) -> dict[str, Any]:
    """The pauses from `paused.json`, in the shape of a `pause_state` answer."""
    from qex.store.pause import read_pause

    pauses = read_pause(paths.paused_file, now)
    return {
        "queue": pauses.queue.to_dict() if pauses.queue else None,
        "locks": [{"name": name, "record": record.to_dict(), "held_by": None}
                  for name, record in sorted(pauses.locks.items())],
    }


@click.group("pause", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print what is paused as one JSON object.")
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> None:
    """Take the machine, or one lock, back for a while. With no word: say what is paused,
    since when, by which pid, and until when. Running jobs continue through any pause."""
    if ctx.invoked_subcommand is not None:
        return
    from qex.cli.reach import open_connection, pause_state

    paths = get_paths()
    conn = open_connection(paths, start=False)
    state: dict[str, Any] | None = None
    if conn is not None:
        with conn:
            state = pause_state(conn)
    if state is None:
        state = disk_pause_state(paths, time.time())
    print_state(state, as_json)


def _until(for_text: str | None) -> float | None:
    from qex.core.units import UnitError, parse_duration

    if for_text is None:
        return None
    try:
        seconds = parse_duration(for_text, what="pause time")
    except UnitError as exc:
        raise click.BadParameter(str(exc), param_hint="--for") from None
    if seconds is None:
        raise click.BadParameter(
            f"`{for_text}` is no time at all; give a time longer than zero, such as 30m, or "
            "leave --for out for a pause with no end (to end a pause now, run "
            "`qex resume queue`)", param_hint="--for")
    return time.time() + seconds


def _pause(target: dict[str, Any], reason: str | None, for_text: str | None,
           drain: bool) -> tuple[Any, dict[str, Any]]:
    from qex.cli.reach import open_connection, require

    until = _until(for_text)
    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    require(conn, "pause", "pause the queue or a lock")
    answer = conn.pause(target, reason=reason, until=until, by_pid=os.getpid(), drain=drain)
    return conn, answer


@command.command("queue")
@click.option("--reason", metavar="TEXT", help="Why; every command that lists jobs shows it.")
@click.option("--for", "for_text", metavar="TIME",
              help="End the pause by itself after this time, such as 30m.")
@click.option("--drain", is_flag=True,
              help="Return only once no job of this queue runs any more.")
@click.option("--json", "as_json", is_flag=True, help="Print the pauses as one JSON object.")
def pause_queue(*, reason: str | None, for_text: str | None, drain: bool, as_json: bool) -> None:
    """Start no new job until `qex resume queue` (or the end given with --for). A second
    pause keeps the end and the reason of the first one."""
    conn, answer = _pause({"kind": "queue"}, reason, for_text, drain)
    with conn:
        note = already_paused_warning(answer)
        if note:
            warn(note)
        running = answer.get("jobs_running")
        if not isinstance(running, int):  # a coordinator older than the count in the answer
            running = conn.fresh_info().get("jobs_running")
        if drain:
            print_state(answer, as_json)
            if isinstance(running, int) and running > 0:
                warn(f"{running} job(s) still run; qex waits until they stop")
                _wait_quiet(conn)
            if not as_json:
                click.echo("the machine is quiet: no job of this queue runs")
            return
    print_state(answer, as_json)
    note = still_running_warning(running)
    if note:
        warn(note)


@command.command("lock")
@click.argument("name")
@click.option("--reason", metavar="TEXT", help="Why; the jobs that wait for the lock show it.")
@click.option("--for", "for_text", metavar="TIME",
              help="Give the lock back by itself after this time, such as 1h.")
@click.option("--json", "as_json", is_flag=True, help="Print the pauses as one JSON object.")
def pause_lock(*, name: str, reason: str | None, for_text: str | None, as_json: bool) -> None:
    """Take the lock NAME for yourself. A job that holds it now keeps it until it stops, no
    other job takes it, and it is yours from then until `qex resume lock NAME`."""
    conn, answer = _pause({"kind": "lock", "name": name}, reason, for_text, False)
    conn.close()
    if as_json:
        print_state(answer, True)
        return
    click.echo(lock_taken_line(name, answer))


def _wait_quiet(conn: Any) -> None:
    """Wait until no job runs: woken by the event stream, with a slow look as a fallback."""
    from qex.cli.reach import open_connection
    from qex.client.errors import CoordinatorError

    def quiet() -> bool:
        info = conn.fresh_info()
        return bool(info.get("jobs_running") == 0)

    try:
        stream_conn = open_connection(get_paths(), start=False) \
            if "events" in conn.capabilities() else None
        if stream_conn is not None:
            with stream_conn:
                events = stream_conn.events("now")
                next(events, None)  # the `stream` header: the subscription is in place
                if quiet():
                    return
                for message in events:
                    event = message.get("event") if isinstance(message.get("event"), dict) else {}
                    if isinstance(event, dict) and event.get("event") == "bye":
                        break
                    if quiet():
                        return
        while not quiet():
            time.sleep(1.0)
    except KeyboardInterrupt:
        die("the wait for a quiet machine stopped; the queue stays paused", Exit.FAILURE)
    except CoordinatorError as exc:  # a lost stream ends the wait with a sentence, not a trace
        exc.message = f"{exc.message}; the queue stays paused"
        raise
    sys.stdout.flush()
