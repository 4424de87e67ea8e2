"""Which jobs a typed word can name: the one rule that `qex.cli.resolve` applies to decide,
and that the coordinator applies to send only the records a word can name.

A word names a job by an id prefix or by the job's name (as given, or in safe form), and a
group by a group id prefix or the group's name; a whole id (any case) names only the job or
the group with exactly that id. Pure: plain strings in, booleans out. The coordinator's
filter and the resolver's decision read these functions, so a listing cut down to the
records a word can name resolves the word exactly as the whole listing does (a property
test holds that), while the coordinator skips encoding thousands of records for
`qex status 1a2b3c4d`.
"""

from __future__ import annotations

from qex.core.names import is_uuid, safe_name


def names_job(word: str, job_id: str, name: str) -> tuple[bool, bool]:
    """(by id prefix, by name) for one job and a word that is not a whole id."""
    return job_id.startswith(word), name == word or safe_name(name) == word


def names_group(word: str, group: str, group_name: str) -> bool:
    """True when a word that is not a whole id names this group (id prefix or name)."""
    if not group:
        return False
    named = bool(group_name) and word in (group_name, safe_name(group_name))
    return group.startswith(word) or named


def may_name(word: str, job_id: str, name: str, group: str, group_name: str) -> bool:
    """True when `word` (as typed: it is stripped here) can name this job or its group."""
    word = word.strip()
    if not word:
        return False
    if is_uuid(word):
        lowered = word.lower()
        return job_id.lower() == lowered or group.lower() == lowered
    by_id, by_name = names_job(word, job_id, name)
    return by_id or by_name or names_group(word, group, group_name)
