"""`qex du`: the disk space that qex holds, what `qex gc` would give back, and the largest
job records. Reads the disk only: no coordinator is asked or started."""

from __future__ import annotations

import time
from typing import Any

import click

from qex.cli.common import get_paths, print_json, warn


def _keep(paths: Any) -> float:
    """`[gc] keep`; a config file with a fault still lets `du` answer, with the default."""
    from qex.core.config import ConfigError, GcSection
    from qex.store.config_file import load_config

    try:
        return load_config(paths).gc.keep
    except ConfigError as exc:
        warn(f"{exc}; `du` counts with the default `[gc] keep` of 1d")
        return GcSection().keep


@click.command("du")
@click.option("--top", "top_n", type=click.IntRange(min=0), default=10, show_default=True,
              metavar="N", help="List the N largest job records.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def command(*, top_n: int, as_json: bool) -> None:
    """Show how much disk space the state directory uses, how much `qex gc` would free,
    and which job records are the largest."""
    from qex.cli.disk_usage import is_orphan, scan_jobs
    from qex.core import job_filters as jf
    from qex.core.names import safe_name, short_id
    from qex.core.units import format_duration, format_size
    from qex.store.tree_size import tree_bytes

    paths = get_paths()
    keep = _keep(paths)
    now = time.time()
    entries = scan_jobs(paths)
    records = [e.record for e in entries if e.record is not None]
    known = {str(r.get("id")) for r in records}
    held = jf.held_ids(records)
    total = tree_bytes(paths.state_dir)
    jobs_bytes = sum(e.bytes for e in entries)
    orphans = [e for e in entries if is_orphan(e, known=known, now=now, older_than=keep)]
    reclaimable = sum(e.bytes for e in orphans)
    for entry in entries:
        record = entry.record
        if record is None or entry.id in held or not jf.is_final(record):
            continue
        if (jf.age_secs(record, now) or 0.0) >= keep:
            reclaimable += entry.bytes
    largest = sorted(entries, key=lambda e: e.bytes, reverse=True)[:top_n]

    def row(entry: Any) -> dict[str, Any]:
        record = entry.record or {}
        return {"id": entry.id, "name": safe_name(str(record.get("name") or "")) or None,
                "state": record.get("state"), "bytes": entry.bytes}

    if as_json:
        print_json({
            "state_dir": str(paths.state_dir),
            "total_bytes": total,
            "jobs_bytes": jobs_bytes,
            "other_bytes": max(0, total - jobs_bytes),
            "reclaimable_bytes": reclaimable,
            "gc_keep_secs": keep,
            "job_count": len(entries),
            "directories_with_no_record": len([e for e in entries if e.record is None]),
            "largest": [row(e) for e in largest],
        })
        return
    click.echo(f"qex holds {format_size(total)} in {paths.state_dir}")
    click.echo(f"  job records:  {format_size(jobs_bytes)} in {len(entries)} job "
               f"director{'y' if len(entries) == 1 else 'ies'}")
    click.echo(f"  other files:  {format_size(max(0, total - jobs_bytes))} "
               "(coordinator log, history, learned claims)")
    click.echo(f"  reclaimable:  {format_size(reclaimable)} by `qex gc` (records that stopped more "
               f"than {format_duration(keep)} ago, and {len(orphans)} directories with no record)")
    if largest:
        click.echo("largest job records:")
        for entry in largest:
            item = row(entry)
            click.echo(f"  {short_id(entry.id)}  {item['state'] or 'no record'!s:<10} "
                       f"{format_size(entry.bytes):>8}  {item['name'] or '-'}")
