"""`qex run -- CMD`: queue a job and copy its output here until it stops.

For a short task that a person (or an agent) watches. The job still runs under a supervisor
and leaves a record, but this command owns it: if the command stops before the job starts the
coordinator cancels it, and Ctrl-C or SIGTERM stops the job (a second Ctrl-C ends the command
at once). A job that a dedupe key gave us belongs to someone else: Ctrl-C then only stops the
watching (122).
"""

from __future__ import annotations

from typing import Any

import click

from qex.cli.submitting import COMMAND_SETTINGS, spec_options


@click.command("run", context_settings=COMMAND_SETTINGS)
@spec_options
def command(**values: Any) -> None:
    """Queue a job and stream its output; exit with its code. Ctrl-C stops the job."""
    from qex.cli.common import get_paths
    from qex.cli.submit_flow import FOLLOW, submit_one
    from qex.core.states import Exit

    paths = get_paths(Exit.QEX_FAILED)
    submit_one(paths, values, mode=FOLLOW)
