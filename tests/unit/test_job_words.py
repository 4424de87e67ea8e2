"""`qex.core.job_words`: the records a word may name. The coordinator sends only those for
`list` with a `word`, so the resolver must decide the same from them as from every record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordkit import add_job, make_coord
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.coordinator import queries
from qex.core import job_filters
from qex.core.job_words import NameForms, may_name, names_group, names_job, word_test
from qex.core.names import is_uuid, safe_name
from qex.core.word_match import Resolved, ResolveError, match_word

IDS = ("aaaaaaaa-1111-4111-8111-111111111111", "aaaabbbb-2222-4222-8222-222222222222",
       "bbbbbbbb-3333-4333-8333-333333333333", "AAAACCCC-4444-4444-8444-444444444444")
GROUPS = ("99999999-0000-4000-8000-000000000001", "98888888-0000-4000-8000-000000000002")
NAMES = ("build", "build job", "build_job", "-x", "ci", "lint", "")


def _record(index: int, job_id: str, name: str, group: str | None,
            group_name: str | None) -> dict[str, Any]:
    return {"id": job_id, "name": name, "state": "queued", "submitted_at": float(index),
            "sequence": index, "group": group, "group_name": group_name}


records_strategy = st.lists(
    st.tuples(st.sampled_from(IDS), st.sampled_from(NAMES),
              st.one_of(st.none(), st.sampled_from(GROUPS)),
              st.one_of(st.none(), st.sampled_from(NAMES))),
    max_size=8,
).map(lambda rows: [_record(i, *row) for i, row in enumerate(rows)])

words_strategy = st.one_of(
    st.sampled_from((*IDS, *GROUPS, *NAMES, " build ", "aaaa", "AAAA", "9", "98888888",
                     IDS[0].upper(), GROUPS[0].upper(), "build-job")),
    st.text(alphabet="ab9 -_", max_size=6),
)


def _outcome(records: list[dict[str, Any]], word: str) -> tuple[Any, ...]:
    try:
        found: Resolved = match_word(records, word)
    except ResolveError as exc:
        return ("error", exc.message, exc.not_found)
    return ([r["id"] for r in found.jobs], found.group, found.group_name, found.by_name)


@given(records=records_strategy, word=words_strategy)
def test_the_records_a_word_may_name_resolve_it_as_all_records_do(
    records: list[dict[str, Any]], word: str,
) -> None:
    kept = [r for r in records
            if may_name(word, r["id"], r["name"], r["group"] or "", r["group_name"] or "")]
    assert _outcome(kept, word) == _outcome(records, word)


@given(job_id=st.sampled_from(IDS), name=st.sampled_from(NAMES) | st.text(max_size=6),
       group=st.sampled_from(("", *GROUPS)), group_name=st.sampled_from(NAMES),
       word=words_strategy)
def test_the_kept_forms_decide_as_the_rule_does(job_id: str, name: str, group: str,
                                                group_name: str, word: str) -> None:
    """`word_test` over a job's kept `NameForms` (what the coordinator runs for each job it
    holds) against the rule written out from `names_job` and `names_group`."""
    stripped = word.strip()
    if not stripped:
        expected = False
    elif is_uuid(stripped):
        expected = stripped.lower() in (job_id.lower(), group.lower())
    else:
        by_id, by_name = names_job(stripped, job_id, name)
        expected = by_id or by_name or names_group(stripped, group, group_name)
    forms = NameForms(job_id, name, group, group_name)
    assert word_test(word)(forms) is expected
    assert may_name(word, job_id, name, group, group_name) is expected
    assert forms.same(job_id, name, group, group_name)
    assert not forms.same(job_id, name + "x", group, group_name)


@given(held=st.one_of(st.none(), st.lists(st.sampled_from(("ml", "gpu", "a b", "a_b", "-x", "")),
                                         max_size=3)),
       wanted=st.lists(st.sampled_from(("ml", "gpu", "a b", "a_b", "-x", "_x", "")), max_size=3))
def test_the_tags_test_decides_as_the_rule_does(held: list[str] | None,
                                                wanted: list[str]) -> None:
    record = {"tags": held}
    mine = {safe_name(str(t)) for t in held} | {str(t) for t in held} if held else set()
    expected = all(t in mine or safe_name(t) in mine for t in wanted)
    assert job_filters.tags_test(wanted)(record) is expected
    assert job_filters.has_tags(record, wanted) is expected


def test_a_blank_word_names_nothing() -> None:
    assert not may_name("  ", IDS[0], "build", "", "")


def test_the_coordinator_sends_only_what_the_word_may_name(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    build = add_job(coord, submitted_at=1.0, name="build")
    other = add_job(coord, submitted_at=2.0, name="test")
    every = queries.handle_list(coord)
    assert [r["id"] for r in every["jobs"]] == [build.id, other.id]
    by_name = queries.handle_list(coord, {"op": "list", "word": "build"})
    assert [r["id"] for r in by_name["jobs"]] == [build.id]
    by_prefix = queries.handle_list(coord, {"op": "list", "word": other.id[:8]})
    assert other.id in [r["id"] for r in by_prefix["jobs"]]
    assert build.id not in [r["id"] for r in by_prefix["jobs"]] or build.id.startswith(
        other.id[:8])
    by_whole_id = queries.handle_list(coord, {"op": "list", "word": build.id.upper()})
    assert [r["id"] for r in by_whole_id["jobs"]] == [build.id]
    assert queries.handle_list(coord, {"op": "list", "word": "nothing"})["jobs"] == []
    # Not a string (a newer or a broken client): every record, as without a word.
    assert queries.handle_list(coord, {"op": "list", "word": 7}) == every


class _ListingWire:
    """A coordinator that answers `status` for a whole id and `list` with a word as
    `queries.handle_list` does: the records that the word may name."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["op"] == "status":
            found = [r for r in self.records if r["id"] == message["id"]]
            return ({"result": "status", "status": found[0]} if found
                    else {"result": "error", "kind": "no_such_job", "message": "none"})
        word = message["word"]
        return {"result": "jobs", "jobs": [
            r for r in self.records
            if may_name(word, r["id"], r["name"], r["group"] or "", r["group_name"] or "")]}


def _lean(records: list[dict[str, Any]], word: str) -> tuple[Any, ...] | None:
    from qex.cli import fastread

    found = fastread.word_jobs(_ListingWire(records), word)  # type: ignore[arg-type]
    return None if found is None else ([r["id"] for r in found[0]], found[1])


@settings(max_examples=400)
@given(records=records_strategy, word=words_strategy)
def test_the_lean_look_up_names_what_the_resolver_names(
    records: list[dict[str, Any]], word: str,
) -> None:
    """`fastread.word_jobs` (the lean commands' look-up) names the job or the group's stages
    that `match_word` names, or leaves the word to the full body, which words the refusal.
    Records of one id twice never occur; the status request of a whole id answers the first."""
    outcome = _outcome(records, word)
    lean = _lean(records, word)
    if outcome[0] == "error" or word != word.strip():
        assert lean is None
    elif len({r["id"] for r in records}) == len(records):
        assert lean == (outcome[0], outcome[1])


def test_the_lean_look_up_by_name_and_group() -> None:
    """The cases a person meets: a name of one job, a name two runs share, a group's name and
    id, a stage's own name, a name that is the start of another job's id."""
    stage = "dddddddd-6666-4666-8666-666666666666"
    rows = [_record(0, IDS[0], "build", None, None), _record(1, IDS[1], "ci", None, None),
            _record(2, IDS[2], "ci", None, None), _record(3, IDS[3], "lint", GROUPS[0], "lint"),
            _record(5, stage, "stage-2", GROUPS[1], "checks"),
            _record(4, "eeeeeeee-6666-4666-8666-666666666666", "stage-1", GROUPS[1], "checks"),
            _record(6, "cccccccc-5555-4555-8555-555555555555", "bbbb", None, None)]
    first = "eeeeeeee-6666-4666-8666-666666666666"
    assert {word: _lean(rows, word) for word in (
        "build", "ci", "lint", "stage-2", "checks", GROUPS[1], GROUPS[1][:8], "bbbb",
        "aaaaaaaa", IDS[0].upper(), "x", " build")} == {
        "build": ([IDS[0]], None), "ci": None, "lint": ([IDS[3]], GROUPS[0]),
        "stage-2": ([stage], None), "checks": ([first, stage], GROUPS[1]),
        GROUPS[1]: ([first, stage], GROUPS[1]), GROUPS[1][:8]: ([first, stage], GROUPS[1]),
        "bbbb": None, "aaaaaaaa": ([IDS[0]], None), IDS[0].upper(): ([IDS[0]], None),
        "x": None, " build": None}
