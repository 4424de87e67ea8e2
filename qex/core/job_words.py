"""Which jobs a typed word can name: the one rule that the resolver applies to decide,
and that the coordinator applies to send only the records a word can name.

A word names a job by an id prefix or by the job's name (as given, or in safe form), and a
group by a group id prefix or the group's name; a whole id (any case) names only the job or
the group with exactly that id. `pick` decides what a word names among records: one job,
one group, or a case to refuse. Pure, and cheap to import. The coordinator's filter, the
resolver (`qex.core.word_match`, which words the refusals) and the lean commands
(`qex.cli.fastread`) read these functions, so a listing cut down to the records a word can
name resolves the word exactly as the whole listing does (a property test holds that),
while the coordinator skips encoding thousands of records for `qex status 1a2b3c4d`.
"""

from __future__ import annotations

from qex.core.names import is_uuid, safe_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


def names_job(word: str, job_id: str, name: str) -> tuple[bool, bool]:
    """(by id prefix, by name) for one job and a word that is not a whole id."""
    return job_id.startswith(word), name == word or safe_name(name) == word


def names_group(word: str, group: str, group_name: str) -> bool:
    """True when a word that is not a whole id names this group (id prefix or name)."""
    if not group:
        return False
    named = bool(group_name) and word in (group_name, safe_name(group_name))
    return group.startswith(word) or named


class NameForms:
    """What a word is compared with for one job: its id, its group's id, and both names as
    given and in safe form. The coordinator keeps one per job (`Job.name_forms`): it compares
    every job it holds with the word of each `status`, `wait` or `--after`, and making the
    safe forms again each time was most of that (10 ms per word with 5,000 records)."""

    __slots__ = ("group", "group_name", "group_safe", "job_id", "name", "safe")

    def __init__(self, job_id: str, name: str, group: str, group_name: str) -> None:
        self.job_id, self.name, self.group, self.group_name = job_id, name, group, group_name
        self.safe = safe_name(name)
        self.group_safe = safe_name(group_name) if group_name else ""

    def same(self, job_id: str, name: str, group: str, group_name: str) -> bool:
        """True when these are the forms of these fields (so they need not be made again)."""
        return (self.job_id == job_id and self.name == name and self.group == group
                and self.group_name == group_name)


def word_test(word: str) -> Callable[[NameForms], bool]:
    """`may_name` for one word over many jobs: what depends on the word alone (stripping
    it, whether it is a whole id) is decided once."""
    word = word.strip()
    if not word:
        return lambda forms: False
    if is_uuid(word):
        lowered = word.lower()
        return lambda forms: forms.job_id.lower() == lowered or forms.group.lower() == lowered

    def test(forms: NameForms) -> bool:
        if forms.job_id.startswith(word) or word in (forms.name, forms.safe):
            return True
        if not forms.group:
            return False
        return forms.group.startswith(word) or (
            bool(forms.group_name) and word in (forms.group_name, forms.group_safe))

    return test


def may_name(word: str, job_id: str, name: str, group: str, group_name: str) -> bool:
    """True when `word` (as typed: it is stripped here) can name this job or its group: by a
    whole id (any case) only the job or group with that id; else by an id prefix or a name
    (as given, or in safe form), as `names_job` and `names_group` say."""
    return word_test(word)(NameForms(job_id, name, group, group_name))


#: What a word picks out of status records (`Pick.kind`): one job, the stages of one group,
#: or one of the cases that a command refuses (`qex.core.word_match.match_word` words each).
ONE_JOB, ONE_GROUP = "job", "group"
JOB_AND_GROUP, GROUPS, JOBS, NOTHING = "job-and-group", "groups", "jobs", "nothing"


class Pick:
    """What `pick` found. `jobs`: the job, the group's stages, or the candidates, each list
    in submission order; `groups`: each group the word names, with its stages; `group`: the
    one group of ONE_GROUP; `by_name`: the word matched by a name, not an id."""

    __slots__ = ("by_name", "group", "groups", "jobs", "kind")

    def __init__(self, kind: str, jobs: list[dict[str, Any]], *, by_name: bool = False,
                 groups: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.kind = kind
        self.jobs = jobs
        self.groups = groups or {}
        self.by_name = by_name
        self.group = next(iter(self.groups)) if kind == ONE_GROUP else None


def submission_order(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records in the order they were submitted (time, then the coordinator's sequence)."""
    def key(record: dict[str, Any]) -> tuple[float, int]:
        return float(record.get("submitted_at") or 0), int(record.get("sequence") or 0)

    return sorted(records, key=key)


def pick(records: Iterable[dict[str, Any]], word: str) -> Pick:
    """The one rule for what a typed word (already stripped, not empty) names among status
    records. A whole id names the job with that id, else the group with it. Any other word
    may name jobs (by id prefix or name) and groups (by id prefix or group name): it picks
    one job, or one group when the jobs it names are that group's stages; anything else is a
    case for the caller to refuse. Pure, and cheap to import: the lean commands and the
    resolver both decide with it."""
    if is_uuid(word):
        lowered = word.lower()
        listed = list(records)
        for record in listed:
            if str(record.get("id", "")).lower() == lowered:
                return Pick(ONE_JOB, [record])
        stages = [r for r in listed if str(r.get("group") or "").lower() == lowered]
        if not stages:
            return Pick(NOTHING, [])
        return Pick(ONE_GROUP, submission_order(stages), groups={str(stages[0]["group"]): stages})
    jobs: list[dict[str, Any]] = []
    groups: dict[str, list[dict[str, Any]]] = {}
    by_name = False
    for record in records:
        by_id, named = names_job(word, str(record.get("id") or ""), str(record.get("name") or ""))
        if by_id or named:
            jobs.append(record)
            by_name = by_name or (named and not by_id)
        group = str(record.get("group") or "")
        if names_group(word, group, str(record.get("group_name") or "")):
            groups.setdefault(group, []).append(record)
    jobs = submission_order(jobs)
    if jobs and groups:
        stage_ids = {str(r.get("id")) for stages in groups.values() for r in stages}
        if {str(r.get("id")) for r in jobs} != stage_ids:
            return Pick(JOB_AND_GROUP, jobs, groups=groups)
    if len(groups) > 1:
        return Pick(GROUPS, jobs, groups=groups)
    if groups:
        group, stages = next(iter(groups.items()))
        return Pick(ONE_GROUP, submission_order(stages), groups=groups,
                    by_name=not group.startswith(word))
    if len(jobs) == 1:
        return Pick(ONE_JOB, jobs, by_name=by_name)
    return Pick(JOBS if jobs else NOTHING, jobs)
