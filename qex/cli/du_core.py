"""What `qex du` prints, without click: the disk space that qex holds, what `qex gc` would
give back, and the largest job records.

It reads the disk only (no coordinator is asked or started), and a person may run it again
and again while a queue fills the disk, so the fast path (`qex.cli.fast`) and the click
command both call `show_du`: the two cannot differ, and the fast one pays for no option
framework.
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from qex.cli.disk_usage import JobDir
    from qex.store.paths import Paths


def _keep(paths: Paths) -> float:
    """`[gc] keep`; a config file with a fault still lets `du` answer, with the default."""
    from qex.cli.common import warn
    from qex.core.config import ConfigError, GcSection
    from qex.store.config_file import load_config

    try:
        return load_config(paths).gc.keep
    except ConfigError as exc:
        warn(f"{exc}; `du` counts with the default `[gc] keep` of 1d")
        return GcSection().keep


def _row(entry: JobDir) -> dict[str, Any]:
    from qex.core.names import safe_name

    record = entry.record or {}
    return {"id": entry.id, "name": safe_name(str(record.get("name") or "")) or None,
            "state": record.get("state"), "bytes": entry.bytes}


def show_du(*, top_n: int, as_json: bool) -> int:
    """Print the usage; the exit code (always 0: a record that cannot be read is counted as
    a directory with no record)."""
    from qex.cli.common import get_paths, print_json
    from qex.cli.disk_usage import is_orphan, scan_jobs
    from qex.core import job_filters as jf
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
            "largest": [_row(e) for e in largest],
        })
        return 0
    from qex.core.names import short_id
    from qex.core.units import format_duration, format_size

    lines = [
        f"qex holds {format_size(total)} in {paths.state_dir}",
        f"  job records:  {format_size(jobs_bytes)} in {len(entries)} job "
        f"director{'y' if len(entries) == 1 else 'ies'}",
        f"  other files:  {format_size(max(0, total - jobs_bytes))} "
        "(coordinator log, history, learned claims)",
        f"  reclaimable:  {format_size(reclaimable)} by `qex gc` (records that stopped more "
        f"than {format_duration(keep)} ago, and {len(orphans)} directories with no record)",
    ]
    if largest:
        lines.append("largest job records:")
        for entry in largest:
            item = _row(entry)
            lines.append(f"  {short_id(entry.id)}  {item['state'] or 'no record'!s:<10} "
                         f"{format_size(entry.bytes):>8}  {item['name'] or '-'}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
