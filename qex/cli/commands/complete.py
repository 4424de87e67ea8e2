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
    from qex.cli.complete_jobs import KINDS, MAX_ITEMS, candidates

    if what not in KINDS:
        return
    seen: set[str] = set()
    lines: list[str] = []
    for job_id, name in candidates(what):
        lines.append(job_id)
        if name not in seen:
            seen.add(name)
            lines.append(name)
        if len(lines) >= MAX_ITEMS:
            break
    if lines:
        try:
            click.echo("\n".join(lines))
        except OSError:
            pass
