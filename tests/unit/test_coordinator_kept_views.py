"""What the coordinator keeps between requests so that a listing or a look-up does not walk
thousands of records from scratch: the submission order, each job's name forms, and a final
job's filter fields. Each must follow the change it depends on."""

from __future__ import annotations

import json
from pathlib import Path

from coordkit import add_job, make_coord
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qex.coordinator import listing, queries
from qex.core.records import JobStatus


def ids(answer: dict[str, object]) -> list[str]:
    jobs = answer["jobs"]
    assert isinstance(jobs, list)
    return [str(job["id"]) for job in jobs]


def json_ids(coord: object, message: dict[str, object]) -> list[str]:
    answer, document = listing.handle_list_json(coord, message)  # type: ignore[arg-type]
    assert answer["result"] == "jobs_json", answer
    return [str(item["id"]) for item in json.loads(document)]


def test_the_kept_order_follows_every_change_of_the_jobs_held(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    late = add_job(coord, submitted_at=30.0)
    early = add_job(coord, submitted_at=10.0)
    assert [job.id for job in coord.sorted_jobs()] == [early.id, late.id]
    middle = add_job(coord, submitted_at=20.0)
    order = coord.sorted_jobs()
    assert [job.id for job in order] == [early.id, middle.id, late.id]
    order.clear()  # a caller's copy: the kept order is not touched
    assert [job.id for job in coord.sorted_jobs()] == [early.id, middle.id, late.id]
    coord.forget(middle)
    assert [job.id for job in coord.sorted_jobs()] == [early.id, late.id]
    del coord.jobs[early.id]
    assert [job.id for job in coord.sorted_jobs()] == [late.id]
    coord.jobs[late.id] = late  # replaced by itself: still one job
    assert [r.id for r in coord.sorted_records()] == [late.id]


def test_a_job_put_again_is_found_by_its_new_name(tmp_path: Path) -> None:
    """A job's name is set at its submission, and every record written later copies it; a
    job whose name did change is put into the table again, and the index follows."""
    coord = make_coord(tmp_path)
    job = add_job(coord, submitted_at=1.0, name="first name")
    assert ids(queries.handle_list(coord, {"op": "list", "word": "first_name"})) == [job.id]
    job.record = JobStatus.from_dict({**job.record.to_dict(), "name": "second"})
    coord.jobs[job.id] = job
    assert ids(queries.handle_list(coord, {"op": "list", "word": "first_name"})) == []
    assert ids(queries.handle_list(coord, {"op": "list", "word": "second"})) == [job.id]


def test_a_live_job_is_filtered_by_its_state_now(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord, submitted_at=1.0, state="running", tags=["nightly"])
    done = add_job(coord, submitted_at=2.0, state="completed", tags=["nightly"])
    running = {"op": "list_json", "states": ["running"]}
    assert json_ids(coord, running) == [job.id]
    assert json_ids(coord, {"op": "list_json", "tags": ["nightly"]}) == [job.id, done.id]
    job.record.state = "completed"
    assert json_ids(coord, running) == []
    assert json_ids(coord, {"op": "list_json", "states": ["completed"]}) == [job.id, done.id]
    assert done.filter_fields is not None and job.filter_fields is not None


def test_the_word_index_finds_what_the_rule_names(tmp_path: Path) -> None:
    """The look-up through the index against the rule over every job, for words of each
    kind, as jobs come and go."""
    from qex.core.job_words import may_name

    coord = make_coord(tmp_path)
    group = "99999999-0000-4000-8000-000000000001"
    jobs = [add_job(coord, submitted_at=float(n), name=name, group=grp, group_name=gname)
            for n, (name, grp, gname) in enumerate([
                ("build", None, None), ("build job", None, None), ("test", group, "fan out"),
                ("", group, "fan out"), ("-x", None, None)])]
    words = ["build", "build_job", "build job", "fan_out", "fan out", "9999", group, "_x",
             group.upper(), jobs[0].id[:4], jobs[2].id.upper(), " test ", "", "nothing"]

    def by_rule(word: str) -> list[str]:
        return [job.id for job in coord.sorted_jobs()
                if may_name(word, job.id, job.record.name, job.record.group or "",
                            job.record.group_name or "")]

    for word in words:
        assert [job.id for job in coord.jobs.named_by(word)] == by_rule(word), word
    coord.forget(jobs[2])
    del coord.jobs[jobs[0].id]
    for word in words:
        assert [job.id for job in coord.jobs.named_by(word)] == by_rule(word), word
    assert [job.id for job in coord.jobs.named_by("fan_out")] == [jobs[3].id]


_IDS = ("aaaaaaaa-1111-4111-8111-111111111111", "aaaabbbb-2222-4222-8222-222222222222",
        "bbbbbbbb-3333-4333-8333-333333333333", "AAAACCCC-4444-4444-8444-444444444444")
_GROUPS = ("", "99999999-0000-4000-8000-000000000001", "98888888-0000-4000-8000-000000000002")
_NAMES = ("build", "build job", "build_job", "-x", "_x", "ci", "")


@given(jobs=st.lists(st.tuples(st.sampled_from(_IDS), st.sampled_from(_NAMES),
                               st.sampled_from(_GROUPS), st.sampled_from(_NAMES)),
                     max_size=6),
       gone=st.lists(st.sampled_from(_IDS), max_size=2),
       word=st.one_of(st.sampled_from((*_IDS, *_GROUPS, *_NAMES, "aaaa", "AAAA", "9", " ci ")),
                      st.text(alphabet="ab9 -_x", max_size=5)))
def test_the_index_never_misses_what_the_rule_names(
    jobs: list[tuple[str, str, str, str]], gone: list[str], word: str,
) -> None:
    from qex.coordinator.word_index import WordIndex
    from qex.core.job_words import NameForms, may_name

    index = WordIndex()
    held: dict[str, tuple[str, str, str, str]] = {}
    for job in jobs:
        index.add(NameForms(*job))
        held[job[0]] = job
    for job_id in gone:
        index.remove(job_id)
        held.pop(job_id, None)
    assert len(index) == len(held)
    named = {job_id for job_id, job in held.items() if may_name(word, *job)}
    found = index.candidates(word)
    assert found is None or named <= found
    assert found is None or found <= set(held)


def test_a_filter_of_live_states_chooses_as_over_every_job(tmp_path: Path) -> None:
    """`list --state running` looks only at the jobs that are not final; with a final state
    among those asked for, or a group word, at every job. Either way the same jobs."""
    coord = make_coord(tmp_path)
    group = "99999999-0000-4000-8000-000000000001"
    made = [add_job(coord, submitted_at=float(n), state=state, group=group, group_name="fan")
            for n, state in enumerate(["completed", "running", "queued", "failed", "running"])]
    by_state = {state: [job.id for job in made if job.record.state in state.split(",")]
                for state in ("running", "queued", "running,queued", "failed", "running,failed")}
    for states, expected in by_state.items():
        message = {"op": "list_json", "states": states.split(",")}
        assert json_ids(coord, message) == expected
        assert json_ids(coord, {**message, "group": "fan"}) == expected
    made[1].record.state = "completed"  # ended: it leaves the live jobs
    assert json_ids(coord, {"op": "list_json", "states": ["running"]}) == [made[4].id]


_TAGS = ("nightly", "night ly", "night_ly", "gpu", "-x", "_x", "é")
_DIRS = ("/", "/src", "/src/a", "/src/a/b", "/src2", "/srcx/a", "/other")


@given(jobs=st.lists(st.tuples(st.sampled_from(_IDS),
                               st.one_of(st.none(), st.lists(st.sampled_from(_TAGS), max_size=3)),
                               st.one_of(st.none(), st.sampled_from(_DIRS))),
                     max_size=6),
       gone=st.lists(st.sampled_from(_IDS), max_size=2),
       tags=st.lists(st.one_of(st.sampled_from(_TAGS), st.text(alphabet="nx _-", max_size=3)),
                     max_size=2),
       cwd=st.one_of(st.none(), st.sampled_from(_DIRS)),
       under=st.one_of(st.none(), st.sampled_from((*_DIRS, "/src/", "/sr"))))
@settings(max_examples=300)
@example(jobs=[(_IDS[0], ["night ly"], "/src/a")], gone=[], tags=["night_ly"], cwd=None,
         under="/src")
@example(jobs=[(_IDS[0], ["_x"], "/srcx/a"), (_IDS[1], ["gpu"], "/src2")], gone=[],
         tags=["-x"], cwd=None, under="/src/")
def test_the_filter_index_finds_what_the_filters_keep(
    jobs: list[tuple[str, list[str] | None, str | None]], gone: list[str], tags: list[str],
    cwd: str | None, under: str | None,
) -> None:
    """The candidates of a filter of tags and directories against the rules over every
    job (`chosen_jobs`), as jobs come and go: never one fewer (and here none more)."""
    from qex.coordinator.filter_index import FilterIndex
    from qex.core.job_filters import chosen_jobs

    index = FilterIndex()
    held: dict[str, dict[str, object]] = {}
    for job_id, job_tags, job_cwd in jobs:
        index.add(job_id, job_tags, job_cwd)
        held[job_id] = {"id": job_id, "tags": job_tags, "cwd": job_cwd, "state": "queued"}
    for job_id in gone:
        index.remove(job_id)
        held.pop(job_id, None)
    assert len(index) == len(held)
    kept = {str(r["id"]) for r in chosen_jobs(list(held.values()), tags=tags, cwd_dir=cwd,
                                              under_dir=under)}
    found = index.candidates(tags, cwd, under)
    if not tags and cwd is None and under is None:
        assert found is None
    else:
        assert found == kept


def test_a_filter_of_tags_or_directories_lists_what_it_listed_over_every_job(
        tmp_path: Path) -> None:
    """The listings through the index, with states and without, as jobs come and go: a
    few candidates among many (sorted), and most of the jobs (picked from the kept order)."""
    from coordkit import add_grouped_jobs

    coord = make_coord(tmp_path)
    for n in range(30):
        add_job(coord, submitted_at=990.0 - n, cwd="/", state="completed")
    add_grouped_jobs(coord, 1000.0)
    every = [job.record.to_dict() for job in coord.sorted_jobs()]
    from qex.core.job_filters import chosen_jobs

    messages: list[dict[str, object]] = [
        {"tags": ["nightly"]}, {"tags": ["nightly", "gpu"]}, {"cwd": "/src/a"},
        {"under": "/src"}, {"under": "/"}, {"tags": ["nightly"], "under": "/src/a"},
        {"tags": ["nightly"], "states": ["completed"]}, {"tags": ["none"]},
        {"tags": ["nightly"], "group": "fan"},
    ]
    keys = {"tags": "tags", "cwd": "cwd_dir", "under": "under_dir", "states": "states",
            "group": "group_word"}
    for message in messages:
        expected = [str(r["id"]) for r in chosen_jobs(
            every, **{keys[k]: v for k, v in message.items()})]  # type: ignore[arg-type]
        assert json_ids(coord, {"op": "list_json", **message}) == expected, message
        table, _ = listing.handle_list_table(coord, {"op": "list_table", **message})
        assert table["result"] == "jobs_table"
    gone = coord.sorted_jobs()[0]
    coord.forget(gone)
    assert gone.id not in json_ids(coord, {"op": "list_json", "under": "/"})
