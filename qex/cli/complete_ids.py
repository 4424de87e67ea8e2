"""Job ids and names for shell completion, read from disk only.

Completion runs at every Tab press, so it must be fast and must never start a coordinator
or print an error into the user's prompt: it reads the status files, and any failure gives
no candidates. Newest jobs come first, because the job you want is usually the last one.

Other commands attach these to their id arguments:
`@click.argument("job", shell_complete=complete_ids)` (or `complete_active`,
`complete_queued`).
"""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from qex.core.names import safe_name

KINDS = ("ids", "active", "queued")
#: At most this many candidates: the recent jobs are the ones a person completes, and a shell
#: that lists thousands of ids at one Tab press is of no help.
MAX_ITEMS = 200
_ACTIVE = frozenset({"starting", "running"})


def candidates(kind: str) -> list[tuple[str, str]]:
    """(id, safe name) of the jobs of one kind, newest first. Never raises."""
    try:
        from qex.core.record_json import sort_key
        from qex.store import atomic, jobs
        from qex.store.paths import Paths

        paths = Paths.from_env()
        records: list[dict[str, Any]] = []
        for job_dir in jobs.iter_job_dirs(paths):
            data = atomic.read_json(job_dir / jobs.STATUS)
            if isinstance(data, dict) and isinstance(data.get("id"), str):
                records.append(data)
    except Exception:
        return []
    if kind == "active":
        records = [r for r in records if r.get("state") in _ACTIVE]
    elif kind == "queued":
        records = [r for r in records if r.get("state") == "queued"]
    records.sort(key=sort_key, reverse=True)
    return [(str(r["id"]), safe_name(str(r.get("name") or "job"))) for r in records]


def _items(kind: str, incomplete: str) -> list[CompletionItem]:
    items: list[CompletionItem] = []
    names: set[str] = set()
    for job_id, name in candidates(kind):
        if job_id.startswith(incomplete):
            items.append(CompletionItem(job_id, help=name))
        if name.startswith(incomplete) and name not in names:
            names.add(name)
            items.append(CompletionItem(name, help=f"the name of {job_id[:8]}"))
        if len(items) >= MAX_ITEMS:
            break
    return items


def complete_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return _items("ids", incomplete)


def complete_active(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return _items("active", incomplete)


def complete_queued(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return _items("queued", incomplete)
