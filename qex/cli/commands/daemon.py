"""`qex daemon`: run the coordinator in this process (hidden; the CLI or systemd starts it)."""

from __future__ import annotations

import click


@click.command(name="daemon", hidden=True)
@click.option("--supervised", is_flag=True,
              help="Started by the systemd user unit (readiness goes to systemd).")
@click.option("--foreground", is_flag=True, hidden=True,
              help="Accepted for older callers; the coordinator always runs in the foreground.")
def command(supervised: bool, foreground: bool) -> None:
    """Run the coordinator of this state directory until it is idle or told to stop.

    The coordinator is normally started for you: by the first command that needs it, or by
    the systemd socket unit (`qex systemd install`). Its log is `<state>/run/daemon.log`.
    """
    from qex.cli.daemon_start import run_daemon

    del supervised, foreground  # readiness is sent whenever NOTIFY_SOCKET is set
    run_daemon()
