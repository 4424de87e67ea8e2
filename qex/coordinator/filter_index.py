"""The jobs that `qex list --tag T`, `--cwd` and `--under DIR` may keep, found without a walk
over every job held.

An agent that tags its work lists it by tag, again and again, while the coordinator holds
thousands of other jobs; a filter of tags or directories tested every one of them (4 ms of
the coordinator's time with 5,000 jobs). This index gives the candidates instead: job ids by
each tag, as given and in safe form, and by the directory the job runs in, with the
directories in a sorted list, so that those under one directory are one range of it. The
listing still applies every filter to the candidates (`job_filters.chosen_jobs`), so the
index only narrows what the rules decide: a tag matches when the tag or its safe form is
one of the job's tags or their safe forms (`job_filters.tag_forms`, which `tags_test` reads
too), and a directory as
`job_filters.in_dir` compares it.

It holds what a job had when it was added: a job's tags and directory are set at its
submission and every record written later copies them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from qex.coordinator.word_index import starting_with
from qex.core.job_filters import tag_forms
from qex.core.names import safe_name


class FilterIndex:
    """Job ids by tag form and by directory."""

    def __init__(self) -> None:
        self._tagged: dict[str, set[str]] = {}
        self._in_dir: dict[str, set[str]] = {}
        #: The keys of `_in_dir`, sorted.
        self._dirs: list[str] = []
        #: What each job was filed under, to take it out again: its tag forms (None for
        #: none, as most jobs have) and its directory (None when the record has none).
        self._held: dict[str, tuple[tuple[str, ...] | None, str | None]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def add(self, job_id: str, tags: object, cwd: object) -> None:
        if job_id in self._held:
            self.remove(job_id)
        forms = tuple(tag_forms(tags)) or None
        directory = cwd if isinstance(cwd, str) else None
        self._held[job_id] = (forms, directory)
        for form in forms or ():
            self._tagged.setdefault(form, set()).add(job_id)
        if directory is not None:
            held = self._in_dir.get(directory)
            if held is None:
                held = self._in_dir[directory] = set()
                bisect.insort(self._dirs, directory)
            held.add(job_id)

    def remove(self, job_id: str) -> None:
        filed = self._held.pop(job_id, None)
        if filed is None:
            return
        forms, directory = filed
        for form in forms or ():
            _discard(self._tagged, form, job_id)
        if directory is not None and _discard(self._in_dir, directory, job_id):
            del self._dirs[bisect.bisect_left(self._dirs, directory)]

    def candidates(self, tags: Iterable[str] = (), cwd_dir: str | None = None,
                   under_dir: str | None = None) -> set[str] | None:
        """The ids of the jobs that carry every tag of `tags` and run in `cwd_dir` (exactly)
        and in or under `under_dir`, and perhaps a few more; None when none of the three
        is given (every job is a candidate)."""
        found: set[str] | None = None
        for tag in tags:
            ids = self._tagged.get(tag, set()) | self._tagged.get(safe_name(tag), set())
            found = ids if found is None else found & ids
        if cwd_dir is not None:
            ids = self._in_dir.get(cwd_dir, set())
            found = set(ids) if found is None else found & ids
        if under_dir is not None:
            ids = self._under(under_dir)
            found = ids if found is None else found & ids
        return found

    def _under(self, directory: str) -> set[str]:
        found = set(self._in_dir.get(directory, ()))
        prefix = directory if directory.endswith("/") else directory + "/"
        for held in starting_with(self._dirs, prefix):
            found |= self._in_dir[held]
        return found


def _discard(index: dict[str, set[str]], key: str, job_id: str) -> bool:
    """Take `job_id` out of `index[key]`; True when the key then holds nobody (and is gone)."""
    held = index.get(key)
    if held is None:
        return False
    held.discard(job_id)
    if held:
        return False
    del index[key]
    return True
