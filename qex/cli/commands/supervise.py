"""`qex supervise <id>` (hidden): one job's supervisor, the code of `python -m qex.supervisor`.

The coordinator starts `python -m qex.supervisor` because it loads less; this command exists so
that a person debugging a job (or a packaging that only ships the `qex` script) can reach the
same entry point.
"""

from __future__ import annotations

import sys

import click


@click.command(name="supervise", hidden=True)
@click.argument("job_id")
@click.option("--hook", "hook_only", is_flag=True,
              help="Run only the stop hook of a job that is already final.")
def command(job_id: str, hook_only: bool) -> None:
    """Run one job's supervisor (started by the coordinator; not for daily use)."""
    from qex.supervisor.main import main

    sys.exit(main(["--hook", job_id] if hook_only else [job_id]))
