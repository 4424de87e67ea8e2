"""The jobs a typed word may name, found without a walk over every job held.

`qex status 1a2b3c4d`, `qex wait build` and `--after NAME` each name jobs by a word, and a
coordinator that has run for days holds thousands of finished jobs. Testing each of them
with the rule (`job_words.word_test`) cost 2.5 ms per word with 5,000 jobs, and 7.5 ms when
the processor's caches had gone cold in the pause between two commands. The index gives the
few candidates instead: job ids and group ids in sorted lists (the ids that start with a word
are one range of them), names and group names, as given and in safe form, in a dict. Each
candidate is then tested by the rule itself, so the index only narrows what the rule decides.
A whole id, in any case, is rare in a word (the commands ask for a whole id by `status`) and
is tested against every job.

It holds the forms a job had when it was added: a job's id, name and group are set at its
submission and never change while the coordinator holds it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from qex.core.job_words import NameForms
from qex.core.names import is_uuid


def starting_with(ordered: list[str], prefix: str) -> Iterator[str]:
    """The items of the sorted list `ordered` that start with `prefix`: one range of it."""
    for item in ordered[bisect.bisect_left(ordered, prefix):]:
        if not item.startswith(prefix):
            return
        yield item


class WordIndex:
    """Job ids by id prefix, group-id prefix, name and group name."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._groups: list[str] = []
        self._members: dict[str, set[str]] = {}
        #: The ids a name names: one id as itself, several as a set (most names are a job's
        #: own, and a set for each was half a kilobyte per queued job).
        self._named: dict[str, str | set[str]] = {}
        self._held: dict[str, NameForms] = {}

    def __len__(self) -> int:
        return len(self._held)

    def add(self, forms: NameForms) -> None:
        job_id = forms.job_id
        if job_id in self._held:
            self.remove(job_id)
        self._held[job_id] = forms
        bisect.insort(self._ids, job_id)
        for word in self._words(forms):
            named = self._named.get(word)
            if named is None:
                self._named[word] = job_id
            elif isinstance(named, str):
                self._named[word] = {named, job_id}
            else:
                named.add(job_id)
        if forms.group:
            members = self._members.get(forms.group)
            if members is None:
                members = self._members[forms.group] = set()
                bisect.insort(self._groups, forms.group)
            members.add(job_id)

    def remove(self, job_id: str) -> None:
        forms = self._held.pop(job_id, None)
        if forms is None:
            return
        del self._ids[bisect.bisect_left(self._ids, job_id)]
        for word in self._words(forms):
            named = self._named.get(word)
            if named == job_id:
                del self._named[word]
            elif isinstance(named, set):
                named.discard(job_id)
                if len(named) == 1:
                    self._named[word] = next(iter(named))
        members = self._members.get(forms.group) if forms.group else None
        if members is not None:
            members.discard(job_id)
            if not members:
                del self._members[forms.group]
                del self._groups[bisect.bisect_left(self._groups, forms.group)]

    def members(self, group: str) -> set[str]:
        """The ids of a group's jobs (empty for a group it does not hold)."""
        return set(self._members.get(group, ()))

    def member_count(self, group: str) -> int:
        return len(self._members.get(group, ()))

    def candidates(self, word: str) -> set[str] | None:
        """The ids of the jobs `word` may name, and perhaps a few more; None for a whole id
        (test every job)."""
        word = word.strip()
        if not word:
            return set()
        if is_uuid(word):
            return None
        named = self._named.get(word)
        found = {named} if isinstance(named, str) else set(named or ())
        found.update(starting_with(self._ids, word))
        for group in starting_with(self._groups, word):
            found |= self._members[group]
        return found

    @staticmethod
    def _words(forms: NameForms) -> set[str]:
        """The words that name this job by a name: its own, and its group's when it has a
        group (the rule names a group by its name only then)."""
        words = {forms.name, forms.safe}
        if forms.group and forms.group_name:
            words |= {forms.group_name, forms.group_safe}
        words.discard("")
        return words
