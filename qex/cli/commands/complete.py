"""`qex __complete ids|active|queued` (hidden): completion candidates for shell scripts.

Reads the disk only, never starts a coordinator, and never fails: a shell calls it at each
Tab press, and an error there would land in the middle of the user's command line.
"""

from __future__ import annotations

import click


@click.command("__complete", hidden=True)
@click.argument("what", required=False, default="ids")
def command(what: str) -> None:
    """Print job ids (newest first), each followed by its safe name (each name once)."""
    from qex.cli.complete_jobs import KINDS, candidates
    from qex.core.job_candidates import offered

    if what not in KINDS:
        return
    lines = [value for value, _help in offered(candidates(what), "")]
    if lines:
        try:
            click.echo("\n".join(lines))
        except OSError:
            pass
