"""What `qex gc` does, without click: delete every record that stopped long enough ago
(through the coordinator, which keeps the ones that unfinished work needs) and job
directories that hold no readable record.

A timer or a person's routine runs it, so the fast path (`qex.cli.fast`) and the click
command both call `collect`: the two cannot differ, and the fast one pays for no option
framework. A mistake in `--older-than` raises `GcUsage` before anything is read, so that
click words it with its usage line.
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from qex.cli.disk_usage import JobDir


class GcUsage(Exception):
    """`--older-than` holds no duration; the message says why."""


def _keep_seconds(older_than: str | None) -> float | None:
    """The age from `--older-than`, or None for `[gc] keep`; GcUsage for a bad value."""
    if older_than is None:
        return None
    from qex.core.units import UnitError, parse_duration

    try:
        return parse_duration(older_than, what="age") or 0.0
    except UnitError as exc:
        raise GcUsage(str(exc)) from None


def _named(record: dict[str, Any]) -> dict[str, Any]:
    from qex.core.names import safe_name

    return {"id": record.get("id"), "name": safe_name(str(record.get("name") or "job"))}


def collect(*, older_than: str | None, dry_run: bool, as_json: bool) -> int:
    """Delete (or, with `dry_run`, count) what is old enough and print what went; the exit
    code (0; the client's errors reach `qex.cli.main` as they do from every command)."""
    from qex.cli.common import get_paths, load_config, warn
    from qex.cli.disk_usage import is_orphan, scan_jobs
    from qex.cli.reach import cleaned, open_connection
    from qex.core import job_filters as jf
    from qex.core import protocol
    from qex.store.jobs import remove_job_dir

    paths = get_paths()
    chosen = _keep_seconds(older_than)
    keep = load_config(paths).gc.keep if chosen is None else chosen
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        records = conn.list_jobs()
        now = time.time()
        held = jf.held_ids(records)
        known = {str(r.get("id")) for r in records}
        sizes = {entry.id: entry for entry in scan_jobs(paths)}
        old = [r for r in records if jf.is_final(r) and (jf.age_secs(r, now) or 0.0) >= keep]
        orphans = [e for e in sizes.values() if is_orphan(e, known=known, now=now,
                                                          older_than=keep)]
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
        from qex.cli.common import print_json

        print_json({
            "older_than_secs": keep,
            "dry_run": dry_run,
            "jobs": [_named(r) for r in deleted],
            "directories_with_no_record": [e.id for e in orphans],
            "damaged_kept": [str(e.path) for e in young_damaged],
            "kept_because_a_job_needs_them": [_named(r) for r in kept],
            "bytes": freed,
        })
        return 0
    _report(keep, dry_run=dry_run, deleted=deleted, orphans=orphans,
            young_damaged=young_damaged, kept=kept, freed=freed)
    return 0


def _report(keep: float, *, dry_run: bool, deleted: list[dict[str, Any]], orphans: list[JobDir],
            young_damaged: list[JobDir], kept: list[dict[str, Any]], freed: int) -> None:
    from qex.cli.disk_usage import ORPHAN_MIN_AGE
    from qex.core.units import format_duration, format_size

    verb = "would delete" if dry_run else "deleted"
    freed_verb = "would free" if dry_run else "freed"
    records_noun = "record" if len(deleted) == 1 else "records"
    dirs_noun = "directory" if len(orphans) == 1 else "directories"
    lines = [f"qex {verb} {len(deleted)} {records_noun} of jobs that stopped more than "
             f"{format_duration(keep)} ago and {len(orphans)} {dirs_noun} with no record, "
             f"and {freed_verb} {format_size(freed)}."]
    for entry in young_damaged:
        lines.append(f"the record in {entry.path} cannot be read; its directory stays until it "
                     f"is {format_duration(max(keep, ORPHAN_MIN_AGE))} old (delete it yourself "
                     "if its logs do not matter)")
    if kept:
        noun = "record stays" if len(kept) == 1 else "records stay"
        lines.append(f"{len(kept)} {noun}, because work that has not stopped needs them; "
                     "each goes once that work stops.")
    sys.stdout.write("\n".join(lines) + "\n")
