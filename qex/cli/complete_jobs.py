"""The jobs that a Tab press offers after a command that takes an id.

Completion runs at every Tab press, so it must be fast and must never start a coordinator
or print an error into the user's prompt. A running coordinator holds every record and
answers `complete` in a fraction of a millisecond; without one (or with one older than that
request, or slow to answer) the disk says: for every job, the history file alone when it
names exactly the jobs on disk, else the status files. Any failure gives no candidates.
Newest jobs come first, because the job you want is usually the last one. Without click,
`pathlib`, `json` or the record types, so that the fast completion
(`qex.cli.fastcomplete`) and click's (`qex.cli.complete_ids`) share it.
"""

from __future__ import annotations

import os

from qex.core.job_candidates import KINDS, MAX_ITEMS, kept, offered, pair, states_of

__all__ = ["KINDS", "MAX_ITEMS", "candidates", "offered_for", "state_dir"]

#: How long a Tab press waits for the coordinator before it reads the disk instead.
ASK_SECS = 0.3
#: A larger history is not read for a Tab press (about 100,000 jobs): the records are. The
#: same bound as `qex.store.history.MAX_READ_BYTES`, past which `lookup` too reads only the
#: file's tail; written out, not imported, since that module brings `pathlib` into a Tab
#: press (`tests/unit/test_job_candidates.py` holds the two equal).
MAX_HISTORY_BYTES = 16 * 1024 * 1024
#: The names that `Paths.jobs_dir` and `Paths.history_file` give under the state directory
#: (`tests/unit/test_job_candidates.py` holds them to `Paths`).
JOBS = "jobs"
HISTORY = "history.jsonl"


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


def state_dir() -> str:
    """The state directory of this environment (`Paths.state_dir`), as a string."""
    from qex.store.where import state_dir as plain_state_dir

    state = plain_state_dir(os.environ)
    if state is None:  # only `Paths` can say (see `where.state_dir`)
        from qex.store.paths import Paths

        return str(Paths.from_env().state_dir)
    return state


def candidates(kind: str) -> list[tuple[str, str]]:
    """(id, safe name) of the jobs of one kind on disk, newest first. Never raises."""
    try:
        state = state_dir()
        listed = from_history(state) if states_of(kind) is None else None
        return from_records(state, kind) if listed is None else listed
    except Exception:
        return []


def job_dirs(state: str) -> set[str]:
    """The names of the job directories (each a job's id), without reading any of them."""
    from qex.core.names import is_uuid

    with os.scandir(os.path.join(state, JOBS)) as entries:
        return {entry.name for entry in entries
                if entry.is_dir(follow_symlinks=False) and is_uuid(entry.name)}


def from_history(state: str) -> list[tuple[str, str]] | None:
    """Every job's (id, safe name), newest first, from the history file alone: the
    coordinator appends a line for each job it accepts, with its name and time, and one for
    each record it removes, so one file gives what 2,000 records took 50 ms to give. None
    unless the ids it holds are exactly the job directories (a record removed by hand, a job
    of an older qex, a line that could not be written, a history larger than
    `MAX_HISTORY_BYTES`): then only the records can say."""
    from qex.cli.wire import decode, decode_array

    try:
        with open(os.path.join(state, HISTORY), "rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_HISTORY_BYTES:
                return None
            data = handle.read().strip(b"\n")
    except OSError:
        return None
    # The lines as one array, one C call; a line that is not JSON (a write cut short by a
    # full disk) makes that fail, and then each line is read alone. No JSON text holds a
    # raw newline, so the lines are the objects.
    entries = decode_array(b"[" + data.replace(b"\n", b",") + b"]") if data else []
    if entries is None:
        entries = [decode(line) for line in data.split(b"\n")]
    accepted: dict[str, tuple[float, int, str]] = {}
    removed: set[str] = set()
    for index, entry in enumerate(entries):
        job_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(job_id, str):
            continue
        if entry.get("removed_at") is not None:
            removed.add(job_id)
        elif job_id not in accepted:
            submitted, name = entry.get("submitted_at"), entry.get("name")
            accepted[job_id] = (float(submitted) if isinstance(submitted, (int, float)) else 0.0,
                                index, name if isinstance(name, str) else "")
    for job_id in removed:
        accepted.pop(job_id, None)
    if accepted.keys() != job_dirs(state):
        return None
    # The records' order (`record_json.sort_key`): the time, then the coordinator's sequence,
    # which follows the order of the lines.
    newest = sorted(accepted.items(), key=lambda item: item[1][:2], reverse=True)
    return [pair(job_id, name) for job_id, (_when, _line, name) in newest]


def from_records(state: str, kind: str) -> list[tuple[str, str]]:
    """(id, safe name) of the jobs of one kind, newest first, from their records."""
    from qex.cli.wire import decode  # `json` would import `re`: half the floor again
    from qex.core.record_json import sort_key

    # A record in one of the kind's states holds that state as a JSON string, which no
    # writer of records escapes: a record without any of them is not parsed (the parse,
    # 10 µs for a record of 1 KB, was most of a `kill <Tab>` over 2,000 records).
    states = states_of(kind)
    needles = None if states is None else [f'"{state}"'.encode() for state in states]
    records: list[dict[str, object]] = []
    jobs = os.path.join(state, JOBS)
    for name in job_dirs(state):
        try:
            with open(os.path.join(jobs, name, "status.json"), "rb") as handle:
                raw = handle.read()
            if needles is not None and not any(needle in raw for needle in needles):
                continue
            data = decode(raw)
        except (OSError, RecursionError):
            continue
        if data is not None and isinstance(data.get("id"), str) \
                and kept(kind, data.get("state")):
            records.append(data)
    records.sort(key=sort_key, reverse=True)
    return [pair(str(r["id"]), r.get("name")) for r in records]
