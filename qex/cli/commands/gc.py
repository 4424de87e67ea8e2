"""`qex gc`: delete every record that stopped long enough ago, and job directories that
hold no readable record. Records that unfinished work needs stay."""

from __future__ import annotations

import time
from typing import Any

import click

from qex.cli.common import get_paths, print_json


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
    from qex.cli.common import load_config, warn
    from qex.cli.disk_usage import ORPHAN_MIN_AGE, is_orphan, scan_jobs
    from qex.cli.reach import cleaned, open_connection
    from qex.core import job_filters as jf
    from qex.core import protocol
    from qex.core.names import safe_name
    from qex.core.units import UnitError, format_duration, format_size, parse_duration
    from qex.store.jobs import remove_job_dir

    paths = get_paths()
    if older_than is not None:
        try:
            keep = parse_duration(older_than, what="age") or 0.0
        except UnitError as exc:
            raise click.BadParameter(str(exc), param_hint="--older-than") from None
    else:
        keep = load_config(paths).gc.keep

    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        records = conn.list_jobs()
        now = time.time()
        held = jf.held_ids(records)
        known = {str(r.get("id")) for r in records}
        sizes = {entry.id: entry for entry in scan_jobs(paths)}
        old = [r for r in records
               if jf.is_final(r) and (jf.age_secs(r, now) or 0.0) >= keep]
        orphans = [e for e in sizes.values() if is_orphan(e, known=known, now=now, older_than=keep)]
        gone = {e.id for e in orphans}
        # Records that cannot be read and are not old enough yet: said, so none vanishes
        # unnoticed, and kept, because their logs may still matter to someone.
        young_damaged = sorted((e for e in sizes.values()
                                if e.record is None and e.id not in known and e.id not in gone),
                               key=lambda e: e.id)

        deleted: list[dict[str, Any]] = []
        kept: list[dict[str, Any]] = []
        freed = 0
        ids = [str(r.get("id")) for r in old]
        # One request for every deletion (`reach.cleaned`); a dry run asks for none.
        refusals = [None for _id in ids] if dry_run else cleaned(conn, ids)
        for record, job_id, failed in zip(old, ids, refusals, strict=True):
            size = sizes[job_id].bytes if job_id in sizes else 0
            if dry_run and job_id in held:
                kept.append(record)
            elif failed is None:
                deleted.append(record)
                freed += size
            elif failed.kind == protocol.WRONG_STATE:
                kept.append(record)
            elif failed.kind != protocol.NO_SUCH_JOB:
                warn(failed.message)
    for entry in orphans:
        freed += entry.bytes
        if not dry_run:
            remove_job_dir(entry.path)

    if as_json:
        print_json({
            "older_than_secs": keep,
            "dry_run": dry_run,
            "jobs": [{"id": r.get("id"), "name": safe_name(str(r.get("name") or "job"))}
                     for r in deleted],
            "directories_with_no_record": [e.id for e in orphans],
            "damaged_kept": [str(e.path) for e in young_damaged],
            "kept_because_a_job_needs_them": [
                {"id": r.get("id"), "name": safe_name(str(r.get("name") or "job"))} for r in kept],
            "bytes": freed,
        })
        return
    verb = "would delete" if dry_run else "deleted"
    freed_verb = "would free" if dry_run else "freed"
    records_noun = "record" if len(deleted) == 1 else "records"
    dirs_noun = "directory" if len(orphans) == 1 else "directories"
    click.echo(f"qex {verb} {len(deleted)} {records_noun} of jobs that stopped more than "
               f"{format_duration(keep)} ago and {len(orphans)} {dirs_noun} with no record, "
               f"and {freed_verb} {format_size(freed)}.")
    for entry in young_damaged:
        click.echo(f"the record in {entry.path} cannot be read; its directory stays until it is "
                   f"{format_duration(max(keep, ORPHAN_MIN_AGE))} old (delete it yourself if its "
                   "logs do not matter)")
    if kept:
        noun = "record stays" if len(kept) == 1 else "records stay"
        click.echo(f"{len(kept)} {noun}, because work that has not stopped needs them; "
                   "each goes once that work stops.")
