"""`qex watchers`: find the hand-written monitor loops on this machine.

An agent that lost its context can leave a `while pgrep ...; do sleep 60; done` behind that
never ends. This command names each one, says why its test can lie, and what to run instead.
The exit code is 1 when it found any, so a script can use it as a check.
"""

from __future__ import annotations

import click

_MAX_SHOWN = 160


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "for an unknown time"
    from qex.core.units import format_duration

    return "for " + format_duration(seconds)


@click.command(name="watchers")
@click.option("--json", "as_json", is_flag=True, help="Print the loops as a JSON array.")
def command(as_json: bool) -> None:
    """List shell loops that sleep and poll for a job, oldest first, with what to use instead.

    A loop counts when its command line holds `sleep` and one of `while`, `until` or `for`.
    This command, its parent shells and its process group are left out. Exit status: 1 when
    at least one loop was found, 0 when none.
    """
    import os
    import sys
    import time

    from qex.core.names import visible
    from qex.core.watchers import find_watchers
    from qex.platform.proclist import list_processes

    now = time.time()
    found = find_watchers(list_processes(), self_pid=os.getpid())
    if as_json:
        from qex.cli.common import print_json

        print_json([w.to_dict(now) for w in found])
    elif not found:
        click.echo("No monitor loops found. Keep it that way: wait for a job with `qex wait <id>`.")
    else:
        for watcher in found:
            data = watcher.to_dict(now)
            text = visible(watcher.command)
            if len(text) > _MAX_SHOWN:
                text = text[: _MAX_SHOWN - 3] + "..."
            age = data["age_secs"]
            running = _age(age if isinstance(age, float) else None)
            click.echo(f"pid {watcher.pid}, running {running}")
            click.echo(f"  command: {text}")
            click.echo(f"  kind:    {watcher.kind.value}: {data['why']}")
            click.echo(f"  instead: {data['instead']}")
        noun = "loop" if len(found) == 1 else "loops"
        click.echo(
            f"qex: found {len(found)} monitor {noun}; stop each with `kill <pid>` once its work "
            "runs under qex",
            err=True,
        )
    sys.exit(1 if found else 0)
