"""The bodies of `qex clean`, without click: `clean` (the full body, which the click command
runs) and `clean_on_wire` (the fast path's, through `qex.cli.wire`).

`qex clean --state done` is in the short list of commands that the agents' help page gives,
and an agent runs it after its work, one process per call; through click and the full
client it took five to seven times the interpreter's start-up. Both bodies choose with
`choose` and report with `_report`, so they select and print alike. A mistake in the
options raises `CleanUsage` before anything is read, so the fast path can leave it to click,
which words it with the command's usage line.
"""

from __future__ import annotations

import os
import sys
import time

from qex.core.state_words import FINAL_WORDS
from qex.store.tree_size import tree_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from qex.cli.wire import Wire
    from qex.client.errors import Refused

#: `--auto`: the jobs of this directory and below that stopped more than an hour ago.
AUTO_AGE = 3600.0


class CleanUsage(Exception):
    """A mistake in the options; `param_hint` names the option when one value is wrong."""

    def __init__(self, message: str, param_hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param_hint = param_hint


class Choice:
    """What the words and options select: job words, state words, and the filters."""

    __slots__ = ("age", "cwd_dir", "filtering", "job_words", "state_words", "under_dir",
                 "wanted")

    def __init__(self, wanted: set[str], *, state_words: list[str], job_words: list[str],
                 age: float | None, cwd_dir: str | None, under_dir: str | None,
                 all_jobs: bool) -> None:
        self.wanted, self.state_words, self.job_words = wanted, state_words, job_words
        self.age, self.cwd_dir, self.under_dir = age, cwd_dir, under_dir
        self.filtering = bool(all_jobs or wanted or age is not None or cwd_dir is not None
                              or under_dir is not None)

    def listed_states(self) -> list[str] | None:
        """The states to ask the coordinator for (`protocol.list_jobs`), or None for every
        record: with thousands of stopped jobs, a clean of the failed ones need not decode
        every record. A state given as a word needs them all, since it must not also name a
        job; the answer is filtered here all the same, as an older coordinator sends all."""
        return sorted(self.wanted) if self.wanted and not self.state_words else None


def choose(words: Sequence[str], *, all_jobs: bool, states: Sequence[str],
           older_than: str | None, cwd_dir: str | None, under_dir: str | None,
           auto: bool) -> Choice:
    """The selection; `CleanUsage` when the options do not make sense together."""
    from qex.core.state_words import filter_words

    if auto and (all_jobs or states or older_than):
        raise CleanUsage("--auto already means `--state done --older-than 1h --under .`; "
                         "give it alone, or give those options yourself")
    wanted: set[str] = set()
    for word in states:
        try:
            wanted |= filter_words(word)
        except ValueError as exc:
            raise CleanUsage(str(exc), "--state") from None
    state_words: list[str] = []
    job_words: list[str] = []
    for word in words:
        try:
            wanted |= filter_words(word)
            state_words.append(word)
        except ValueError:
            job_words.append(word)
    age: float | None = None
    if older_than is not None:
        from qex.core.duration_text import seconds

        try:
            age = seconds(older_than.strip()) or 0.0
        except ValueError:
            from qex.core.units import UnitError, parse_duration

            try:
                parse_duration(older_than, what="age")  # the sentence for this mistake
            except UnitError as exc:
                raise CleanUsage(str(exc), "--older-than") from None
            raise
    if auto:
        wanted = set(FINAL_WORDS)
        age = AUTO_AGE
        under_dir = under_dir or "."
    choice = Choice(wanted, state_words=state_words, job_words=job_words, age=age,
                    cwd_dir=cwd_dir, under_dir=under_dir, all_jobs=all_jobs)
    if not choice.filtering and not job_words:
        raise CleanUsage("say which records to delete: give ids or names, a state such as "
                         "`done`, or --all, --older-than, --cwd, --under or --auto")
    return choice


def clean(words: Sequence[str], *, all_jobs: bool, states: Sequence[str],
          older_than: str | None, cwd_dir: str | None, under_dir: str | None,
          auto: bool) -> int:
    """Delete the records that the words and filters select; the exit code. A coordinator
    is started when none listens. Raises `CleanUsage` before anything is read."""
    choice = choose(words, all_jobs=all_jobs, states=states, older_than=older_than,
                    cwd_dir=cwd_dir, under_dir=under_dir, auto=auto)
    from qex.cli.common import get_paths
    from qex.cli.reach import cleaned, open_connection
    from qex.cli.resolve import resolve

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        records = conn.list_jobs(states=choice.listed_states())
        _refuse_ambiguous_states(records, choice)
        explicit: list[dict[str, Any]] = []
        for word in choice.job_words:
            explicit.extend(resolve(conn, paths, word).jobs)
        chosen = _chosen(explicit, _filtered(records, choice))
        sizes = [tree_bytes(paths.job_dir(job_id)) for job_id in chosen]
        return _report(chosen, explicit, sizes, cleaned(conn, list(chosen)))


def clean_on_wire(words: Sequence[str], *, all_jobs: bool, states: Sequence[str],
                  older_than: str | None, cwd_dir: str | None, under_dir: str | None,
                  auto: bool) -> int | None:
    """`clean` through `qex.cli.wire`: the exit code, or None, before anything was deleted,
    whenever the full body must do it (no coordinator listens, a word that names nothing or
    more than one job or group, an answer that did not come at once, a coordinator older
    than `clean_many`). Raises `CleanUsage` as `clean` does."""
    choice = choose(words, all_jobs=all_jobs, states=states, older_than=older_than,
                    cwd_dir=cwd_dir, under_dir=under_dir, auto=auto)
    from qex.store.where import state_dir

    state = state_dir(os.environ)
    if state is None:
        return None
    from qex.cli import fastread
    from qex.cli.wire import Wire

    wire = Wire.connect()
    if wire is None:
        return None
    try:
        from qex.core.protocol import list_jobs

        listed = fastread.ask(wire, list_jobs(states=choice.listed_states()))
        if listed is None or listed.get("result") != "jobs":
            return None
        jobs = listed.get("jobs")
        if not isinstance(jobs, list):
            return None
        records = [job for job in jobs if isinstance(job, dict)]
        _refuse_ambiguous_states(records, choice)
        explicit: list[dict[str, Any]] = []
        for word in choice.job_words:
            found = fastread.word_jobs(wire, word)
            if found is None:
                return None
            explicit.extend(found[0])
        chosen = _chosen(explicit, _filtered(records, choice))
        sizes = [tree_bytes(os.path.join(state, "jobs", job_id)) for job_id in chosen]
        refusals = _cleaned_on_wire(wire, list(chosen)) if chosen else []
        if refusals is None:
            return None
        return _report(chosen, explicit, sizes, refusals)
    finally:
        wire.close()


def _cleaned_on_wire(wire: Wire, job_ids: list[str]) -> list[Refused | None] | None:
    """`reach.cleaned` over the wire: each job's refusal or None, in order; None when the
    full body must send it (nothing was deleted)."""
    from qex.core.protocol import clean_many, each_answer, unknown_request

    message = clean_many(job_ids)
    answer = wire.request(message)
    if not isinstance(answer, dict):
        answer = _read_slow(answer, message)  # the request went: its answer must be read
    if unknown_request(answer):
        return None  # an older coordinator deleted nothing: the full body cleans job by job
    each = each_answer(answer, len(job_ids)) if answer.get("result") == "ok" else None
    if each is None:
        from qex.client.connection import answers_of

        each = answers_of(message, answer, len(job_ids))  # the full client's error for it
        if each is None:
            return None
    from qex.cli.fastread import refusal_of
    from qex.client.errors import Refused
    from qex.core.names import printable_line

    found: list[Refused | None] = []
    for one in each:
        refused = refusal_of(one)
        found.append(None if refused is None else Refused(refused[0],
                                                          printable_line(refused[1])))
    return found


def _read_slow(conn: Any, message: dict[str, Any]) -> dict[str, Any]:
    """The answer that the full client took over (a large clean takes a while)."""
    try:
        answer: dict[str, Any] = conn.answer(str(message["op"]))
        return answer
    finally:
        conn.close()


def _refuse_ambiguous_states(records: list[dict[str, Any]], choice: Choice) -> None:
    """A state word that also names a job or a group is refused, not guessed."""
    from qex.core import job_filters as jf

    for word in choice.state_words:
        if jf.names_something(records, word):
            from qex.cli.common import die
            from qex.core.exit_band import Exit

            die(f"`{word}` is a state and also names a job or a group, so qex does not "
                f"guess; give the job's id to delete that job, or `--state {word}` to "
                "delete every job in that state", Exit.NO_SUCH_JOB)


def _filtered(records: list[dict[str, Any]], choice: Choice) -> list[dict[str, Any]]:
    """The stopped records that every given filter selects (none without a filter)."""
    if not choice.filtering:
        return []
    from qex.cli.common import canonical_dir
    from qex.core import job_filters as jf

    now = time.time()
    wanted, age = choice.wanted, choice.age
    here = canonical_dir(choice.cwd_dir) if choice.cwd_dir is not None else None
    top = canonical_dir(choice.under_dir) if choice.under_dir is not None else None
    tests: list[Callable[[dict[str, Any]], bool]] = [jf.is_final]
    if wanted:
        tests.append(lambda record: jf.has_state(record, wanted))
    if age is not None:
        tests.append(lambda record: (jf.age_secs(record, now) or 0.0) >= age)
    if here is not None:
        tests.append(lambda record: jf.in_dir(record, here, below=False))
    if top is not None:
        tests.append(lambda record: jf.in_dir(record, top, below=True))
    return [record for record in records if all(test(record) for test in tests)]


def _chosen(explicit: list[dict[str, Any]], picked: list[dict[str, Any]]
            ) -> dict[str, dict[str, Any]]:
    """Each job once, in the order named, then in the order listed."""
    chosen: dict[str, dict[str, Any]] = {}
    for record in [*explicit, *picked]:
        chosen.setdefault(str(record.get("id")), record)
    return chosen


def _report(chosen: dict[str, dict[str, Any]], explicit: list[dict[str, Any]],
            sizes: list[int], refusals: list[Refused | None]) -> int:
    """Say what went, what stayed and why; the code of the first refusal of a job that was
    named, or 0."""
    from qex.cli.common import warn
    from qex.cli.exits import code_for
    from qex.core.unit_text import format_size

    code = 0
    deleted = 0
    freed = 0
    stayed: list[tuple[dict[str, Any], str]] = []
    named = {str(r.get("id")) for r in explicit}
    for (job_id, record), size, failed in zip(chosen.items(), sizes, refusals, strict=True):
        if failed is None:
            deleted += 1
            freed += size
            continue
        if job_id in named:
            warn(failed.message)
            if code == 0:
                code = code_for(failed, "clean")
        elif failed.kind != "no_such_job":  # protocol.NO_SUCH_JOB
            stayed.append((record, failed.message))
    noun = "record" if deleted == 1 else "records"
    lines = [f"qex deleted {deleted} {noun} and freed {format_size(freed)}."]
    if stayed:
        from qex.core.record_view import job_label, view

        noun = "record" if len(stayed) == 1 else "records"
        lines.append(f"{len(stayed)} {noun} stayed, because work that has not stopped needs "
                     "them:")
        lines.extend(f"  {job_label(view(record))}: {message}" for record, message in stayed)
        lines.append("Each of them goes once the work that holds it stops.")
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return code
