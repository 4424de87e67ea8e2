"""`qex watchers`: find the hand-written monitor loops on this machine.

An agent that lost its context can leave a `while pgrep ...; do sleep 60; done` behind that
never ends. This command names each one, says why its test can lie, and what to run instead.
The exit code is 1 when it found any, so a script can use it as a check. The body is
`qex.cli.watchers_core`, which the fast path calls too.
"""

from __future__ import annotations

import click


@click.command(name="watchers")
@click.option("--json", "as_json", is_flag=True, help="Print the loops as a JSON array.")
def command(as_json: bool) -> None:
    """List shell loops that sleep and poll for a job, oldest first, with what to use instead.

    A loop counts when its command line holds `sleep` and one of `while`, `until` or `for`.
    This command, its parent shells and its process group are left out. Exit status: 1 when
    at least one loop was found, 0 when none.
    """
    import sys

    from qex.cli.watchers_core import show_watchers

    sys.exit(show_watchers(as_json=as_json))
