"""Filters that `list`, `clean` and `gc` share: state, tag, group, directory and age.

Pure over status records (dicts). The directories are given resolved the way the
submission resolved its own (`qex.cli.common.canonical_dir`: absolute, symlinks resolved),
so `--cwd .` finds the jobs submitted here; the command resolves them, since only it knows
where "here" is. States are compared as words (a `State` is its word), so the fast
`qex list` filters without `enum` and `typing`. In the core so that the coordinator can
choose the rows of a filtered `qex list` (`qex.coordinator.listing`) by the same rules.
"""

from __future__ import annotations

from qex.core import state_words as words
from qex.core.names import safe_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


def in_dir(record: dict[str, Any], directory: str, *, below: bool) -> bool:
    """The job ran in `directory` (exactly), or, with `below`, in it or under it."""
    cwd = record.get("cwd")
    if not isinstance(cwd, str):
        return False
    if cwd == directory:
        return True
    if not below:
        return False
    prefix = directory if directory.endswith("/") else directory + "/"
    return cwd.startswith(prefix)


def has_state(record: dict[str, Any], states: Iterable[str]) -> bool:
    """The job is in one of `states` (words, or `State` members, which are their words)."""
    return str(record.get("state")) in {str(s) for s in states}


def is_final(record: dict[str, Any]) -> bool:
    return str(record.get("state")) in words.FINAL_WORDS


def has_tags(record: dict[str, Any], tags: Iterable[str]) -> bool:
    """Every given tag is on the job (compared in safe form, as `qex list` shows tags)."""
    return tags_test(tags)(record)


def tag_forms(held: object) -> set[str]:
    """A job's tags (its record's `tags`) as given and in safe form: what a wanted tag, or
    its safe form, is looked for in."""
    if not isinstance(held, list):
        return set()
    given = {str(tag) for tag in held}
    return given | {safe_name(tag) for tag in given}


def tags_test(tags: Iterable[str]) -> Callable[[dict[str, Any]], bool]:
    """`has_tags` for one set of tags over many records: the tags' safe forms made once."""
    wanted = [(tag, safe_name(tag)) for tag in tags]

    def test(record: dict[str, Any]) -> bool:
        mine = tag_forms(record.get("tags"))
        if not mine:
            return not wanted
        return all(tag in mine or safe in mine for tag, safe in wanted)

    return test


def age_secs(record: dict[str, Any], now: float) -> float | None:
    """How long ago a job stopped (or, with no end time, was submitted)."""
    for key in ("finished_at", "submitted_at"):
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return max(0.0, now - float(value))
    return None


def groups_named(records: Iterable[dict[str, Any]], word: str) -> dict[str, list[dict[str, Any]]]:
    """Groups whose id starts with `word` or whose name (raw or safe) is `word`."""
    found: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        group = record.get("group")
        if not isinstance(group, str) or not group:
            continue
        name = record.get("group_name")
        named = isinstance(name, str) and word in (name, safe_name(name))
        if group.startswith(word) or named:
            found.setdefault(group, []).append(record)
    return found


def names_something(records: Iterable[dict[str, Any]], word: str) -> bool:
    """True when `word` is an id prefix, a name, a group id prefix or a group name."""
    for record in records:
        job_id = str(record.get("id") or "")
        name = str(record.get("name") or "")
        if job_id.startswith(word) or word in (name, safe_name(name)):
            return True
    return bool(groups_named(records, word))


def held_ids(records: list[dict[str, Any]]) -> dict[str, str]:
    """Final records that unfinished work still needs, each with the id of one such job.

    The coordinator applies this rule itself when it refuses a `clean`; this copy lets `gc
    --dry-run` and `du` say what would stay without asking. A record is held when a job that
    has not stopped reaches it through `needs`/`after` (directly or through other records),
    or belongs to the same group as a job that has not stopped.
    """
    by_id = {str(r.get("id")): r for r in records}
    held: dict[str, str] = {}
    for record in records:
        if is_final(record):
            continue
        holder = str(record.get("id"))
        stack = [str(d) for key in ("needs", "after") for d in (record.get(key) or [])]
        seen: set[str] = set()
        while stack:
            dep = stack.pop()
            if dep in seen or dep not in by_id:
                continue
            seen.add(dep)
            target = by_id[dep]
            if is_final(target):
                held.setdefault(dep, holder)
            stack.extend(str(d) for key in ("needs", "after") for d in (target.get(key) or []))
        group = record.get("group")
        if group:
            for other in records:
                if other.get("group") == group and is_final(other):
                    held.setdefault(str(other.get("id")), holder)
    return held


def several_groups_line(word: str, group_ids: list[str]) -> str:
    """What `qex list --group WORD` says when the word names more than one group."""
    return (f"`{word}` names {len(group_ids)} groups, and this list shows all of them: "
            f"{', '.join(group_ids)}; give a group id to see one")


def chosen_jobs(records: list[dict[str, Any]], *, states: Iterable[str] = (),
                tags: Iterable[str] = (), group_word: str | None = None,
                cwd_dir: str | None = None, under_dir: str | None = None,
                on_groups: Callable[[list[str]], None] | None = None) -> list[dict[str, Any]]:
    """The records that `qex list`'s filters keep, in the records' order; every filter
    given must hold. `cwd_dir` and `under_dir` are resolved already (`canonical_dir`).
    `on_groups` hears the ids when `group_word` names several groups (all of them are
    kept). Raises LookupError when `group_word` names no group."""
    chosen = records
    if group_word is not None:
        groups = groups_named(records, group_word)
        if not groups:
            raise LookupError(group_word)
        if len(groups) > 1 and on_groups is not None:
            on_groups(sorted(groups))
        members = {str(r.get("id")) for stages in groups.values() for r in stages}
        chosen = [r for r in chosen if str(r.get("id")) in members]
    wanted = {str(s) for s in states}
    if wanted:
        chosen = [r for r in chosen if str(r.get("state")) in wanted]
    tags = tuple(tags)
    if tags:
        test = tags_test(tags)
        chosen = [r for r in chosen if test(r)]
    if cwd_dir is not None:
        chosen = [r for r in chosen if in_dir(r, cwd_dir, below=False)]
    if under_dir is not None:
        chosen = [r for r in chosen if in_dir(r, under_dir, below=True)]
    return chosen
