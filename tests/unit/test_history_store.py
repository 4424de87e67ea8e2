"""history.jsonl: accepted and removed ids, the merge rule, and pruning by [history] keep."""

from __future__ import annotations

import os
from pathlib import Path

from qex.store import history
from qex.store.paths import Paths


def paths_in(tmp_path: Path) -> Paths:
    return Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
                           "XDG_CONFIG_HOME": str(tmp_path / "config")})


def test_submit_then_remove_merges_to_the_removal(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    history.record_submitted(paths, "a", "build", 10.0)
    history.record_submitted(paths, "b", "test", 11.0)
    history.record_removed(paths, "a", "build", 10.0, removed_at=50.0, final_state="completed")
    assert os.stat(paths.history_file).st_mode & 0o777 == 0o600
    entries = history.read_all(paths)
    assert entries["a"].removed_at == 50.0 and entries["a"].final_state == "completed"
    assert entries["b"].removed_at is None
    assert history.lookup(paths, "b") == entries["b"]
    assert history.lookup(paths, "zzz") is None


def test_torn_or_foreign_lines_are_skipped(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    history.record_submitted(paths, "a", "build", 10.0)
    with open(paths.history_file, "a") as handle:
        handle.write("not json\n[1,2]\n{\"id\": 5}\n{\"id\": \"c\", \"submitted_at\": \"x\"}\n")
    history.record_submitted(paths, "b", "x", 12.0)
    assert sorted(history.read_all(paths)) == ["a", "b"]


def test_prune_keeps_live_and_recent_ids(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    history.record_submitted(paths, "old-removed", "x", 0.0)
    history.record_removed(paths, "old-removed", "x", 0.0, removed_at=100.0, final_state="failed")
    history.record_submitted(paths, "old-live", "x", 0.0)
    history.record_submitted(paths, "old-vanished", "x", 0.0)
    history.record_submitted(paths, "recent", "x", 9_000.0)
    gone = history.prune(paths, keep=1_000.0, now=10_000.0, live_ids={"old-live"})
    assert gone == 2
    assert sorted(history.read_all(paths)) == ["old-live", "recent"]
    assert history.prune(paths, keep=1_000.0, now=10_000.0, live_ids={"old-live"}) == 0


def test_prune_without_a_file(tmp_path: Path) -> None:
    assert history.prune(paths_in(tmp_path), keep=1.0, now=5.0, live_ids=set()) == 0
