"""`qex gc`: delete every record that stopped long enough ago, and job directories that
hold no readable record. Records that unfinished work needs stay. The body is
`qex.cli.gc_core`, which the fast path calls too."""

from __future__ import annotations

import click


@click.command("gc")
@click.option("--older-than", "older_than", metavar="TIME",
              help="Delete records that stopped at least this long ago (default: `[gc] keep`, 1d).")
@click.option("--dry-run", is_flag=True, help="Say what would go, and delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def command(
    *, older_than: str | None, dry_run: bool, as_json: bool,
) -> None:
    """Delete old records of stopped jobs (through the coordinator, which keeps the ones
    that unfinished work needs) and job directories whose record cannot be read."""
    from qex.cli.gc_core import GcUsage, collect

    try:
        collect(older_than=older_than, dry_run=dry_run, as_json=as_json)
    except GcUsage as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from None
