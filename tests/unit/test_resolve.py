"""Resolving a word to jobs: ids, prefixes, names, groups, ambiguity and history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qex.cli.resolve import disk_records
from qex.core.word_match import ResolveError, dependency_ids, history_message, match_word
from qex.store.history import HistoryEntry
from qex.store.paths import Paths

A = "aaaaaaaa-1111-4111-8111-111111111111"
B = "bbbbbbbb-2222-4222-8222-222222222222"
C = "cccccccc-3333-4333-8333-333333333333"
D = "aaaabbbb-4444-4444-8444-444444444444"
G1 = "99999999-0000-4000-8000-000000000001"
G2 = "98888888-0000-4000-8000-000000000002"


def rec(job_id: str, name: str, *, state: str = "queued", at: float = 0.0, group: str | None = None,
        group_name: str | None = None, seq: int = 0) -> dict[str, Any]:
    return {"id": job_id, "name": name, "state": state, "submitted_at": at, "sequence": seq,
            "group": group, "group_name": group_name}


RECORDS = [
    rec(A, "build", at=1, state="completed"),
    rec(B, "test", at=2),
    rec(C, "ship", at=3, group=G1, group_name="ci"),
    rec(D, "lint", at=4, group=G1, group_name="ci"),
]


def test_full_id_and_prefix() -> None:
    assert match_word(RECORDS, A).jobs[0]["id"] == A
    assert match_word(RECORDS, "bbbb").jobs[0]["id"] == B
    assert match_word(RECORDS, A.upper()).jobs[0]["id"] == A


def test_name_and_safe_name() -> None:
    found = match_word(RECORDS, "test")
    assert found.jobs[0]["id"] == B
    assert found.by_name
    odd = [rec(A, "deploy prod$(id)")]
    assert match_word(odd, "deploy_prod_id_").jobs[0]["id"] == A


def test_ambiguous_prefix_lists_the_jobs() -> None:
    with pytest.raises(ResolveError) as info:
        match_word(RECORDS, "aaaa")
    assert info.value.not_found  # names more than one: 127
    assert "names 2 jobs" in info.value.message
    assert A in info.value.message and D in info.value.message


def test_group_by_id_prefix_and_name() -> None:
    by_name = match_word(RECORDS, "ci")
    assert by_name.group == G1
    assert [r["id"] for r in by_name.jobs] == [C, D]
    assert match_word(RECORDS, G1).group == G1
    assert match_word(RECORDS, "9999").group == G1


def test_group_refused_for_one_job_commands() -> None:
    with pytest.raises(ResolveError, match="takes one job"):
        match_word(RECORDS, "ci", one_job=True)


def test_two_runs_of_one_pipeline_name() -> None:
    records = [*RECORDS, rec("dddddddd-5555-4555-8555-555555555555", "ship", at=9, group=G2,
                             group_name="ci")]
    with pytest.raises(ResolveError, match="names 2 groups") as info:
        match_word(records, "ci")
    assert G1 in info.value.message and G2 in info.value.message


def test_job_and_group_with_one_name() -> None:
    records = [*RECORDS, rec("eeeeeeee-6666-4666-8666-666666666666", "ci", at=10)]
    with pytest.raises(ResolveError, match="name of a job and the name of a group"):
        match_word(records, "ci")


def test_not_found_is_127_and_history_speaks() -> None:
    with pytest.raises(ResolveError) as info:
        match_word(RECORDS, "nothing")
    assert info.value.not_found
    gone = "ffffffff-7777-4777-8777-777777777777"
    history = {gone: HistoryEntry(id=gone, name="train", submitted_at=100.0, removed_at=200.0,
                                  final_state="completed")}
    with pytest.raises(ResolveError) as info:
        match_word(RECORDS, gone, history=history, now=200.0 + 3600)
    assert info.value.not_found
    assert "HAPPENED" in info.value.message and "1h" in info.value.message
    assert "`completed`" in info.value.message
    with pytest.raises(ResolveError) as info:
        match_word(RECORDS, "ffffffff-7777", history=history, now=300.0)
    assert "HAPPENED" in info.value.message
    with pytest.raises(ResolveError, match="no record of one") as info:
        match_word(RECORDS, "12345678-1234-4234-8234-123456789012")
    assert info.value.not_found


def test_history_message_for_a_vanished_record() -> None:
    entry = HistoryEntry(id=A, name="x", submitted_at=10.0)
    assert "did not delete it" in history_message(A, entry, 70.0)


def test_empty_word() -> None:
    with pytest.raises(ResolveError, match="empty"):
        match_word(RECORDS, "  ")


def test_dependencies_by_id_name_and_group() -> None:
    assert dependency_ids(RECORDS, [f"{B},{A}", B], option="--needs") == [B, A]
    assert dependency_ids(RECORDS, ["test"], option="--needs") == [B]
    assert dependency_ids(RECORDS, [G1], option="--after") == [C, D]


def test_a_finished_job_by_name_is_refused_but_by_id_accepted() -> None:
    with pytest.raises(ResolveError, match="already stopped"):
        dependency_ids(RECORDS, ["build"], option="--needs")
    assert dependency_ids(RECORDS, [A], option="--needs") == [A]


def test_a_finished_group_by_name_is_refused() -> None:
    done = [rec(C, "ship", state="completed", group=G1, group_name="ci")]
    with pytest.raises(ResolveError, match="every job"):
        dependency_ids(done, ["ci"], option="--needs")
    assert dependency_ids(done, [G1], option="--needs") == [C]


def test_unknown_dependency_names_the_option() -> None:
    with pytest.raises(ResolveError, match="--after nope") as info:
        dependency_ids(RECORDS, ["nope"], option="--after")
    assert info.value.not_found


def test_disk_records(tmp_path: Path) -> None:
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "s")})
    for record in RECORDS:
        job_dir = paths.job_dir(str(record["id"]))
        job_dir.mkdir(parents=True)
        (job_dir / "status.json").write_text(json.dumps(record))
    (paths.jobs_dir / "not-a-job").mkdir()
    assert len(disk_records(paths)) == 4
    assert [r["id"] for r in disk_records(paths, A)] == [A]
    found = match_word(disk_records(paths, "ci"), "ci")
    assert found.group == G1
