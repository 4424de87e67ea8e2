"""What a typed word names among status records, and why a word that names nothing useful
is refused: the pure half of resolving (`qex.cli.resolve` fetches the records).

A pipeline or a fan-out prints a group id, and that id must work wherever a job id works
(`qex wait $GROUP`), so a word may stand for one job or for every stage of a group. When a
word is ambiguous qex refuses and lists the candidates rather than guessing, because acting
on the wrong job (killing it, deleting it) cannot be undone. A word that names nothing is
127; a deleted job's id gets the history text, so an agent learns that the work HAPPENED and
does not run it again.

The rule itself is `qex.core.job_words.pick`; this module words its outcomes. No I/O: the
CLI calls it over the records the coordinator sent (or the disk held), and the coordinator
over its own records when a submission names its dependencies (`submit_words`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from qex.core.job_words import submission_order
from qex.core.model import dataclass, field
from qex.core.names import is_uuid, safe_name, short_id, visible
from qex.core.states import FINAL

if TYPE_CHECKING:
    from qex.core.history_entry import HistoryEntry


@dataclass
class Resolved:
    """What a word named: status records in submission order, and the group when it was one."""

    jobs: list[dict[str, Any]]
    group: str | None = None
    group_name: str | None = None
    #: True when the word matched a job by its name (not by its id).
    by_name: bool = False
    word: str = ""
    #: Ids whose records said `running` or `starting` although no process of theirs remains;
    #: `jobs` shows them as recovery will write them (`qex.cli.stale`).
    judged: list[str] = field(default_factory=list)


class ResolveError(Exception):
    """A word that cannot be used. `not_found` (exit 127): it names no job, or more than one
    where one is needed; the message lists the candidates. Otherwise qex failed (121 or 1)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.not_found = not_found


def _name(record: dict[str, Any]) -> str:
    return safe_name(str(record.get("name") or "")) or "job"


def _job_line(record: dict[str, Any]) -> str:
    return f"  {record.get('id')}  {_name(record)}  ({record.get('state')})"


def _group_result(word: str, group: str, stages: list[dict[str, Any]], one_job: bool) -> Resolved:
    ordered = submission_order(stages)
    if one_job:
        lines = "\n".join(_job_line(r) for r in ordered)
        raise ResolveError(
            f"`{safe_name(word)}` is a group of {len(ordered)} job(s), and this command takes one "
            f"job; name the stage that you want:\n{lines}", not_found=True,
        )
    group_name = next((str(r["group_name"]) for r in ordered if r.get("group_name")), None)
    return Resolved(jobs=ordered, group=group, group_name=group_name, word=word)


def damaged_message(job_id: str, record_path: str) -> str:
    """A job whose record cannot be read: where it is, and what becomes of it."""
    return (f"the job {visible(job_id)} is DAMAGED: its record {visible(record_path)} cannot be "
            "read, so qex neither runs nor reports it; `qex gc` deletes its directory once it "
            "is older than [gc] keep, or delete it yourself")


def history_message(job_id: str, entry: HistoryEntry | None, now: float) -> str:
    """Why an id names nothing now: deleted (the work happened), vanished, or never known."""
    from qex.core.units import format_duration

    if entry is None:
        return (
            f"there is no job with the id {job_id}, and qex has no record of one; check the id, "
            "or submit the job"
        )
    name = safe_name(entry.name) or "job"
    if entry.removed_at is not None:
        ago = format_duration(max(0.0, now - entry.removed_at))
        state = entry.final_state or "unknown"
        return (
            f"the job {job_id} ({name}) existed and its state was `{state}`, and something "
            f"deleted its record {ago} ago; the work of that job HAPPENED, so do not submit it "
            "again unless you want to repeat the work"
        )
    ago = format_duration(max(0.0, now - (entry.submitted_at or now)))
    return (
        f"qex accepted the job {job_id} ({name}) {ago} ago, but its record is gone and qex did not "
        "delete it; read `qex list` for its other jobs, and submit it again only if the work "
        "did not happen"
    )


def match_word(
    records: Sequence[dict[str, Any]], word: str, *, one_job: bool = False,
    history: dict[str, HistoryEntry] | None = None, now: float | None = None,
    damaged: dict[str, str] | None = None,
) -> Resolved:
    """Resolve `word` over `records`; raises ResolveError (not_found for 127).

    `history`: what the history file knows of ids whose records are gone, for a word that
    names nothing; whoever read it gives `now`, the time of the look-up, with it (the age of
    a deleted record is part of the sentence, and this module reads no clock). `damaged`:
    the ids (lower case) whose directory is there but DAMAGED, each with the broken file;
    an id, or a short one of 8 characters or more, that names one of them says so."""
    word = word.strip()
    if not word:
        raise ResolveError("an empty word names no job; give a job id, a name or a group id",
                           not_found=True)
    from qex.core import job_words as jw

    assert history is None or now is not None, "a history comes with the time it was read"
    when = 0.0 if now is None else now
    found = jw.pick(records, word)
    shown = safe_name(word)
    if found.kind == jw.ONE_JOB:
        return Resolved(jobs=found.jobs, by_name=found.by_name, word=word)
    if found.kind == jw.ONE_GROUP and found.group is not None:
        result = _group_result(word, found.group, found.jobs, one_job)
        result.by_name = found.by_name
        return result
    if found.kind == jw.JOB_AND_GROUP:
        groups = "\n".join(f"  group {g}  ({len(s)} job(s))" for g, s in found.groups.items())
        jobs = "\n".join(_job_line(r) for r in found.jobs)
        raise ResolveError(
            f"`{shown}` is the name of a job and the name of a group; give the id of the one "
            f"that you want:\n{jobs}\n{groups}", not_found=True,
        )
    if found.kind == jw.GROUPS:
        lines = "\n".join(
            f"  {g}  ({len(s)} job(s), submitted {_when(s)})"
            for g, s in sorted(found.groups.items(), key=lambda item: _first_time(item[1]))
        )
        raise ResolveError(
            f"`{shown}` names {len(found.groups)} groups, because every run of one file or "
            f"input takes the same name; give the group id that you want:\n{lines}",
            not_found=True,
        )
    if found.kind == jw.NOTHING:
        lowered = word.lower()
        hits = [key for key in (damaged or {}) if len(word) >= 8 and key.startswith(lowered)]
        if damaged and len(hits) == 1:
            raise ResolveError(damaged_message(hits[0], damaged[hits[0]]), not_found=True)
        if is_uuid(word):
            entry = (history or {}).get(lowered)
            raise ResolveError(history_message(word, entry, when), not_found=True)
        matches = [e for key, e in (history or {}).items() if key.startswith(lowered)]
        if len(matches) == 1 and len(word) >= 8:
            raise ResolveError(history_message(matches[0].id, matches[0], when), not_found=True)
        raise ResolveError(
            f"there is no job or group with the id or the name `{shown}`; run `qex list` to see "
            "the jobs that exist",
            not_found=True,
        )
    lines = "\n".join(_job_line(r) for r in found.jobs)
    raise ResolveError(
        f"`{shown}` names {len(found.jobs)} jobs; give the id of the job that you want, or delete "
        f"the old ones with `qex clean done` and start again:\n{lines}", not_found=True,
    )


def _first_time(stages: list[dict[str, Any]]) -> float:
    return min(float(r.get("submitted_at") or 0) for r in stages)


def _when(stages: list[dict[str, Any]]) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(_first_time(stages)))


def dependency_ids(
    records: Sequence[dict[str, Any]], words: Iterable[str], *, option: str,
    history: dict[str, HistoryEntry] | None = None, now: float | None = None,
) -> list[str]:
    """The ids that `--needs`/`--after` values name (comma lists allowed), deduplicated.

    An id only has to exist. A NAME must give work that has not stopped: a name is not unique
    in time, and yesterday's `build` is not the build this job should wait for.
    """
    ids: list[str] = []
    for value in words:
        for word in (part.strip() for part in value.split(",")):
            if not word:
                continue
            try:
                found = match_word(records, word, history=history, now=now)
            except ResolveError as exc:
                raise ResolveError(f"{option} {safe_name(word)}: {exc.message}",
                                   not_found=exc.not_found) from None
            if found.by_name and found.group is None and found.jobs[0].get("state") in FINAL:
                job = found.jobs[0]
                raise ResolveError(
                    f"the name `{safe_name(word)}` given to {option} is the job "
                    f"{short_id(str(job['id']))}, which already stopped in the state "
                    f"`{job.get('state')}`, so it is probably an earlier run; give its id if you "
                    "mean that job"
                )
            if found.by_name and found.group is not None and all(
                r.get("state") in FINAL for r in found.jobs
            ):
                raise ResolveError(
                    f"the name `{safe_name(word)}` given to {option} is a group whose every job "
                    "already stopped, so it is probably an earlier run; give its group id, or "
                    "keep the id of a new run with GROUP=$(qex pipeline your-file)"
                )
            for record in found.jobs:
                job_id = str(record["id"])
                if job_id not in ids:
                    ids.append(job_id)
    return ids
