"""`qex pause`: say what is paused; `qex pause queue` stops new starts; `qex pause lock NAME`
takes a lock for a person. Running jobs always continue: a pause never loses work."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from qex.cli.common import die, get_paths, print_json, warn
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


def _is_paused(state: dict[str, Any]) -> bool:
    return bool(state.get("queue")) or bool(state.get("locks"))


def _print_state(state: dict[str, Any], as_json: bool) -> None:
    from qex.cli.queue_lines import pause_lines

    if as_json:
        print_json({"paused": _is_paused(state), "queue": state.get("queue"),
                    "locks": state.get("locks") or []})
        return
    lines = pause_lines(state, time.time())
    if not state.get("queue"):
        lines.insert(0, "queue: runs (not paused)")
    else:
        lines.insert(1, "(this pauses your queue only; other users of the machine are not paused)")
    if not _is_paused(state):
        lines = ["nothing is paused; the queue runs"]
    click.echo("\n".join(lines))


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
    _print_state(state, as_json)


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
        queue = answer.get("queue")
        if isinstance(queue, dict) and queue.get("by_pid") not in (None, 0, os.getpid()):
            warn(f"the queue was already paused by pid {queue.get('by_pid')}; that pause keeps "
                 "its end and its reason (run `qex resume queue` first to replace them)")
        info = conn.fresh_info()
        running = info.get("jobs_running")
        if drain:
            _print_state(answer, as_json)
            if isinstance(running, int) and running > 0:
                warn(f"{running} job(s) still run; qex waits until they stop")
                _wait_quiet(conn)
            if not as_json:
                click.echo("the machine is quiet: no job of this queue runs")
            return
    _print_state(answer, as_json)
    if isinstance(running, int) and running > 0:
        warn(f"{running} job(s) still run and continue; `qex pause queue --drain` waits for "
             "them, and `qex kill <id>` stops one")


@command.command("lock")
@click.argument("name")
@click.option("--reason", metavar="TEXT", help="Why; the jobs that wait for the lock show it.")
@click.option("--for", "for_text", metavar="TIME",
              help="Give the lock back by itself after this time, such as 1h.")
@click.option("--json", "as_json", is_flag=True, help="Print the pauses as one JSON object.")
def pause_lock(*, name: str, reason: str | None, for_text: str | None, as_json: bool) -> None:
    """Take the lock NAME for yourself. A job that holds it now keeps it until it stops, no
    other job takes it, and it is yours from then until `qex resume lock NAME`."""
    from qex.core.names import lock_arg, lock_shown, printable_line

    conn, answer = _pause({"kind": "lock", "name": name}, reason, for_text, False)
    conn.close()
    if as_json:
        _print_state(answer, True)
        return
    shown = lock_shown(name)
    entry = next((e for e in answer.get("locks") or []
                  if isinstance(e, dict) and str(e.get("name")) == name), None)
    holder = entry.get("held_by") if isinstance(entry, dict) else None
    if isinstance(holder, str) and holder:
        click.echo(f"the job {printable_line(holder)} holds the lock `{shown}` now; it keeps it "
                   "until it stops, and then the lock is yours (`qex pause` shows when)")
    else:
        click.echo(f"the lock `{shown}` is yours: no job takes it until "
                   f"`qex resume lock {lock_arg(name)}`")


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
