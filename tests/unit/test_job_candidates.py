"""What a Tab press offers after a command that takes ids: the coordinator's answer to
`complete` (from the records it holds) against the records read from disk, which the command
reads when no coordinator answers; and the rule that makes candidates of them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from coordkit import add_job, make_coord
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.cli import complete_jobs
from qex.coordinator import queries
from qex.core import job_candidates
from qex.core.protocol import complete
from qex.store import history

jobs_strategy = st.lists(
    st.tuples(st.sampled_from(["queued", "starting", "running", "completed", "failed"]),
              st.sampled_from(["build", "test run", "a", "ab", "job", "déjà vu", "running",
                               "queued"]),
              st.integers(min_value=0, max_value=5)),
    max_size=10,
)


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, prefix=st.sampled_from(["", "a", "b", "t", "0", "j", "d"]))
def test_the_coordinator_offers_what_the_disk_offers(
        jobs: list[tuple[str, str, int]], prefix: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        coord = make_coord(Path(root))
        for index, (state, name, second) in enumerate(jobs):
            add_job(coord, state=state, name=name, submitted_at=1000.0 + second + index / 64)
        on_disk = str(coord.paths.state_dir)
        for kind in job_candidates.KINDS:
            answer = queries.handle_complete(coord, complete(kind, prefix))
            assert answer["result"] == "candidates"
            held = [tuple(pair) for pair in answer["jobs"]]
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(complete_jobs, "state_dir", lambda: on_disk)
                read = list(job_candidates.matching(complete_jobs.candidates(kind), prefix))
            assert held == read
            assert [coord.jobs[job_id].record.submitted_at for job_id, _name in held] == \
                sorted((job.record.submitted_at for job in coord.jobs.values()
                        if job.record.id in dict(held)), reverse=True)


def test_a_bad_request_is_refused(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    assert queries.handle_complete(coord, {"op": "complete", "kind": "all", "prefix": ""})[
        "result"] == "error"
    assert queries.handle_complete(coord, {"op": "complete", "kind": "ids"})[
        "result"] == "error"


def test_the_answer_stops_at_the_most_a_shell_can_use(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    for index in range(job_candidates.MAX_ITEMS + 5):
        add_job(coord, state="completed", name="same", submitted_at=float(index))
    held = queries.handle_complete(coord, complete("ids", ""))["jobs"]
    assert len(held) == job_candidates.MAX_ITEMS
    newest = coord.jobs.ordered()[-1].record.id
    assert held[0] == [newest, "same"]


def test_each_name_is_offered_once_with_its_newest_job() -> None:
    pairs = [("b2", "build"), ("b1", "build"), ("t1", "test")]
    assert job_candidates.offered(pairs, "") == [
        ("b2", "build"), ("build", "the name of b2"), ("b1", "build"), ("t1", "test"),
        ("test", "the name of t1")]
    assert job_candidates.offered(pairs, "b") == [
        ("b2", "build"), ("build", "the name of b2"), ("b1", "build")]
    assert job_candidates.offered(pairs, "t") == [("t1", "test"), ("test", "the name of t1")]


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, gone=st.integers(min_value=0, max_value=3))
def test_the_history_alone_offers_what_the_records_offer(
        jobs: list[tuple[str, str, int]], gone: int) -> None:
    """Every job (`ids`) without a coordinator: the history file, read alone when its live ids
    are the job directories, gives the records' pairs in the records' order."""
    with tempfile.TemporaryDirectory() as root:
        coord = make_coord(Path(root))
        made = []
        for index, (state, name, second) in enumerate(jobs):
            job = add_job(coord, state=state, name=name, submitted_at=1000.0 + second + index / 64)
            history.record_submitted(coord.paths, job.id, name, job.record.submitted_at)
            made.append(job)
        for job in made[:gone]:  # removed by qex: the directory goes, a line says so
            shutil.rmtree(job.dir)
            history.record_removed(coord.paths, job.id, job.record.name, job.record.submitted_at,
                                   removed_at=2000.0, final_state=job.record.state)
        state = str(coord.paths.state_dir)
        from_history = complete_jobs.from_history(state)
        if not jobs:  # nothing was ever accepted: no history file, the records say (none)
            assert from_history is None
            return
        assert from_history is not None
        assert from_history == complete_jobs.from_records(state, "ids")


def test_a_history_that_does_not_name_the_jobs_on_disk_is_not_read_alone(
        tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    state = str(coord.paths.state_dir)
    first = add_job(coord, name="first", submitted_at=1000.0)
    assert complete_jobs.from_history(state) is None  # no history file at all
    history.record_submitted(coord.paths, first.id, "first", 1000.0)
    assert complete_jobs.from_history(state) == [(first.id, "first")]
    second = add_job(coord, name="second", submitted_at=1001.0)  # a job with no line
    assert complete_jobs.from_history(state) is None
    history.record_submitted(coord.paths, second.id, "second", 1001.0)
    assert complete_jobs.from_history(state) == [(second.id, "second"), (first.id, "first")]
    shutil.rmtree(first.dir)  # a record removed by hand: no line says so
    assert complete_jobs.from_history(state) is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(complete_jobs, "state_dir", lambda: state)
        assert complete_jobs.candidates("ids") == [(second.id, "second")]


def test_the_names_under_the_state_dir_are_paths(tmp_path: Path) -> None:
    paths = make_coord(tmp_path).paths
    assert paths.state_dir / complete_jobs.JOBS == paths.jobs_dir
    assert paths.state_dir / complete_jobs.HISTORY == paths.history_file


def test_a_tab_press_and_lookup_bound_the_history_alike() -> None:
    from qex.store.history import MAX_READ_BYTES

    assert complete_jobs.MAX_HISTORY_BYTES == MAX_READ_BYTES
