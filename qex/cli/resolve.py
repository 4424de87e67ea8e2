"""Turning a word that a person typed into jobs: fetch the records it may name (from the
coordinator, or from the disk when none runs), decide with `qex.core.word_match`, and turn a
refusal into the sentence and the exit code of the command.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from qex.core.names import is_uuid, printable_line
from qex.core.word_match import Resolved, ResolveError, match_word

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.store.paths import Paths


def disk_records(paths: Paths, word: str | None = None) -> list[dict[str, Any]]:
    """Status records from the jobs directory, for when no coordinator runs.

    A full id reads one directory; anything else reads every record (names and groups can
    only be matched that way).
    """
    from qex.store import atomic, jobs

    if word is not None and is_uuid(word.strip()):
        data = atomic.read_json(paths.job_dir(word.strip().lower()) / jobs.STATUS)
        if isinstance(data, dict):
            return [data]
    records: list[dict[str, Any]] = []
    for job_dir in jobs.iter_job_dirs(paths):
        data = atomic.read_json(job_dir / jobs.STATUS)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            records.append(data)
    return records


def fetch_records(
    conn: Connection | None, paths: Paths, word: str | None = None
) -> list[dict[str, Any]]:
    """The status records that `word` may name (every record for no word), from the
    coordinator, or the disk's records without one. A coordinator that does not know the
    `word` of `list` sends them all; `match_word` decides either way."""
    if conn is None:
        return disk_records(paths, word)
    from qex.client.errors import Refused

    try:
        return conn.list_jobs(word=word)
    except Refused as exc:
        raise ResolveError(
            f"the coordinator could not list the jobs: {printable_line(exc.message)}") from None


def lookup(conn: Connection | None, paths: Paths, word: str, *, one_job: bool = False,
           recover: bool = False, until: float | None = None) -> Resolved:
    """Like `resolve`, but raises ResolveError or CoordinatorError instead of exiting."""
    stripped = word.strip()
    if conn is not None and is_uuid(stripped):
        # The common case (a script that kept an id) asks for one record, not the list.
        from qex.client.errors import Refused

        try:
            return Resolved(jobs=[conn.status(stripped.lower())], word=word)
        except Refused:
            pass
    records = fetch_records(conn, paths, stripped)
    judged: list[str] = []
    if conn is None:
        from qex.cli.stale import settle

        records, judged = settle(paths, records)
    try:
        found = match_word(records, word, one_job=one_job)
    except ResolveError as exc:
        if not exc.not_found:
            raise
        # Only a word that names nothing reads the history (every job ever submitted):
        # a deleted job's id then says that its work happened.
        from qex.store.history import read_all
        from qex.store.jobs import damaged_dirs

        history = {key.lower(): entry for key, entry in read_all(paths).items()}
        found = match_word(records, word, one_job=one_job, history=history, now=time.time(),
                           damaged=damaged_dirs(paths, stripped))
    found.judged = [r["id"] for r in found.jobs if r.get("id") in judged]
    if found.judged and recover:
        _recover_judged(paths, found, until)
    return found


def _recover_judged(paths: Paths, found: Resolved, until: float | None) -> None:
    """Let a coordinator write what the reader judged, and take its records instead."""
    from qex.cli.stale import recover_now

    written = recover_now(paths, found.judged, until=until)
    if written is None:
        return
    by_id = {str(r.get("id")): r for r in written}
    found.jobs = [by_id.get(str(r.get("id")), r) for r in found.jobs]
    found.judged = []


def resolve(conn: Connection | None, paths: Paths, word: str, *, one_job: bool = False,
            recover: bool = False, until: float | None = None) -> Resolved:
    """The jobs `word` names. On failure raises what `qex.cli.exits` turns into the sentence
    and the code: 127 when it names nothing or more than one job where one is needed, 124 on
    a coordinator timeout, and otherwise 121 in a job-speaking command or 1.

    `recover`: when a named record is stale (its processes are gone, and no coordinator ran
    to say so), start a coordinator so that the record is written, not only shown; `until`
    (the person's --timeout, a time.monotonic() instant) bounds that start."""
    from qex.cli.exits import Failure

    try:
        return lookup(conn, paths, word, one_job=one_job, recover=recover, until=until)
    except ResolveError as exc:
        raise Failure(exc.message, not_found=exc.not_found) from None
