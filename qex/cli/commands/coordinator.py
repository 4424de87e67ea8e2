"""`qex coordinator stop | restart`: end (or replace) the coordinator of this state dir,
never its jobs. The bodies are `qex.cli.coordinator_control`, which the fast path calls too.
"""

from __future__ import annotations

import click


@click.group("coordinator")
def command() -> None:
    """Stop or restart the coordinator; jobs keep running under their supervisors.

    A coordinator started by systemd (qex.socket) is stopped with `systemctl --user`, and
    the socket keeps listening; one started by the CLI gets SIGTERM. Either way the next
    qex command starts a coordinator again when it needs one."""


@command.command("stop")
def stop() -> None:
    """Stop the coordinator of this state directory (never its jobs)."""
    from qex.cli.coordinator_control import stop as stop_coordinator

    stop_coordinator()


@command.command("restart")
def restart() -> None:
    """Replace the coordinator with a new one (after an upgrade, say); jobs keep running
    and the new coordinator adopts them."""
    from qex.cli.coordinator_control import restart as restart_coordinator

    restart_coordinator()
