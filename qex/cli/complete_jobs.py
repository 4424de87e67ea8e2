"""The jobs that a Tab press offers after a command that takes an id.

Completion runs at every Tab press, so it must be fast and must never start a coordinator
or print an error into the user's prompt. A running coordinator holds every record and
answers `complete` in a fraction of a millisecond; without one (or with one older than that
request, or slow to answer) the status files are read from disk. Any failure gives no
candidates. Newest jobs come first, because the job you want is usually the last one.
Without click, `pathlib`, `json` or the record types, so that the fast completion
(`qex.cli.fastcomplete`) and click's (`qex.cli.complete_ids`) share it.
"""

from __future__ import annotations

import os

from qex.core.job_candidates import KINDS, MAX_ITEMS, kept, offered, pair

__all__ = ["KINDS", "MAX_ITEMS", "candidates", "jobs_dir", "offered_for"]

#: How long a Tab press waits for the coordinator before it reads the disk instead.
ASK_SECS = 0.3


def offered_for(kind: str, incomplete: str) -> list[tuple[str, str]]:
    """(value, help) of what a Tab press offers for `incomplete`: each job's id and its name
    (each name once), newest first, up to `MAX_ITEMS`."""
    pairs = asked(kind, incomplete)
    return offered(candidates(kind) if pairs is None else pairs, incomplete)


def asked(kind: str, incomplete: str) -> list[tuple[str, str]] | None:
    """The coordinator's (id, safe name) pairs for this Tab press; None when none answers
    at once with them."""
    try:
        from qex.cli.wire import Wire
        from qex.core.protocol import complete

        wire = Wire.connect(start=False)
        if wire is None:
            return None
        try:
            answer = wire.ask(complete(kind, incomplete), ASK_SECS)
        finally:
            wire.close()
    except Exception:
        return None
    jobs = answer.get("jobs") if answer is not None and answer.get("result") == "candidates" \
        else None
    if not isinstance(jobs, list):
        return None
    pairs = [(pair[0], pair[1]) for pair in jobs if isinstance(pair, list) and len(pair) == 2
             and isinstance(pair[0], str) and isinstance(pair[1], str)]
    return pairs if len(pairs) == len(jobs) else None


def jobs_dir() -> str:
    """The jobs directory of this environment (`Paths.jobs_dir`), as a string."""
    from qex.store.where import state_dir

    state = state_dir(os.environ)
    if state is None:  # only `Paths` can say (see `where.state_dir`)
        from qex.store.paths import Paths

        return str(Paths.from_env().jobs_dir)
    return os.path.join(state, "jobs")


def candidates(kind: str) -> list[tuple[str, str]]:
    """(id, safe name) of the jobs of one kind on disk, newest first. Never raises."""
    try:
        from qex.cli.wire import decode  # `json` would import `re`: half the floor again
        from qex.core.names import is_uuid
        from qex.core.record_json import sort_key

        records: list[dict[str, object]] = []
        with os.scandir(jobs_dir()) as entries:
            for entry in entries:
                if not (entry.is_dir(follow_symlinks=False) and is_uuid(entry.name)):
                    continue
                try:
                    with open(os.path.join(entry.path, "status.json"), "rb") as handle:
                        data = decode(handle.read())
                except (OSError, RecursionError):
                    continue
                if data is not None and isinstance(data.get("id"), str) \
                        and kept(kind, data.get("state")):
                    records.append(data)
        records.sort(key=sort_key, reverse=True)
        return [pair(str(r["id"]), r.get("name")) for r in records]
    except Exception:
        return []
