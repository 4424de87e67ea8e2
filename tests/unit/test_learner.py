"""The learner: keys, pruning, suggestions (pure) and its store (a file per command)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core import learner
from qex.store import usage
from qex.store.paths import Paths

MIB = 1024 * 1024
GIB = 1024 * MIB


def paths_in(tmp: Path) -> Paths:
    return Paths.from_env({"HOME": str(tmp), "XDG_STATE_HOME": str(tmp / "state"),
                           "XDG_CONFIG_HOME": str(tmp / "config")})


def peak(rss: int, cpu: float = 0.0, elapsed: float = 1.0, at: float = 0.0) -> dict[str, object]:
    return learner.peak_sample(max_rss=rss, cpu_secs=cpu, elapsed_secs=elapsed, at=at, claim=None)


def test_key_is_stable_and_separates_arguments() -> None:
    key = learner.learn_key("/w", ["a", "b"])
    assert key == learner.learn_key("/w", ["a", "b"])
    assert len(key) == 16 and int(key, 16) >= 0
    assert key != learner.learn_key("/w", ["ab"])
    assert key != learner.learn_key("/x", ["a", "b"])
    assert learner.learn_key("/w", ["\udcff"])  # undecodable bytes from argv still hash


def test_keeps_last_five_peaks_and_the_largest_oom() -> None:
    entry = None
    for i in range(8):
        entry = learner.add_sample(entry, peak((i + 1) * MIB, at=i), "job")
    entry = learner.add_sample(entry, learner.oom_sample(claim=2 * GIB, max_rss=GIB, cpu_secs=1,
                                                         elapsed_secs=1, at=9), "job")
    entry = learner.add_sample(entry, learner.oom_sample(claim=GIB, max_rss=GIB, cpu_secs=1,
                                                         elapsed_secs=1, at=10), "job")
    entry = learner.add_sample(entry, {"kind": "future", "x": 1}, "job")
    assert entry is not None
    peaks = [s for s in entry["samples"] if s["kind"] == "peak"]
    assert [s["at"] for s in peaks] == [3, 4, 5, 6, 7]
    ooms = [s for s in entry["samples"] if s["kind"] == "oom"]
    assert [s["claim"] for s in ooms] == [2 * GIB]
    assert {"kind": "future", "x": 1} in entry["samples"]


def test_suggest_uses_the_largest_peak_with_margin() -> None:
    entry = learner.add_sample(None, peak(GIB, cpu=30, elapsed=10), "j")
    entry = learner.add_sample(entry, peak(GIB // 2, cpu=5, elapsed=10), "j")
    assert learner.suggest(entry, 1.5, 2.0, 64 * GIB) == (5, int(1.5 * GIB))


def test_an_oom_bound_is_not_erased_by_a_smaller_peak() -> None:
    entry = learner.add_sample(None, learner.oom_sample(claim=4 * GIB, max_rss=4 * GIB,
                                                        cpu_secs=0, elapsed_secs=0, at=0), "j")
    entry = learner.add_sample(entry, peak(GIB), "j")
    assert learner.suggest(entry, 1.5, 2.0, 64 * GIB) == (1, 8 * GIB)
    # ...and the budget still caps it.
    assert learner.suggest(entry, 1.5, 2.0, 6 * GIB) == (1, 6 * GIB)


def test_suggest_floor_and_nothing_learned() -> None:
    assert learner.suggest(None, 1.5, 2.0, GIB) is None
    assert learner.suggest({"samples": [{"kind": "future"}]}, 1.5, 2.0, GIB) is None
    tiny = learner.add_sample(None, peak(1000), "j")
    assert learner.suggest(tiny, 1.5, 2.0, GIB) == (1, learner.MIN_MEM)


@given(st.lists(st.tuples(st.integers(1, 10 * GIB), st.floats(0, 1e5), st.floats(0, 1e5)),
                min_size=1, max_size=12),
       st.floats(1.0, 4.0), st.integers(learner.MIN_MEM, 100 * GIB))
def test_suggestion_bounds(runs: list[tuple[int, float, float]], margin: float,
                           budget: int) -> None:
    entry = None
    for rss, cpu, elapsed in runs:
        entry = learner.add_sample(entry, peak(rss, cpu, elapsed), "j")
    result = learner.suggest(entry, margin, 2.0, budget)
    assert result is not None
    cores, mem = result
    assert cores >= 1
    assert learner.MIN_MEM <= mem <= budget
    kept = [r for r, _, _ in runs][-learner.MAX_PEAKS:]
    assert mem >= min(budget, int(max(kept) * margin))


def test_store_round_trip_mode_and_concurrency(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    assert usage.lookup(paths, "k") is None
    threads = [
        threading.Thread(target=usage.record_peak, args=(paths, "k"),
                         kwargs={"name": "job", "max_rss": (i + 1) * MIB, "cpu_secs": 1.0,
                                 "elapsed_secs": 2.0, "at": float(i)})
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entry = usage.lookup(paths, "k")
    assert entry is not None and entry["name"] == "job" and len(entry["samples"]) == 4
    entry_file = usage.entry_path(paths, "k")
    assert entry_file is not None
    assert stat.S_IMODE(os.stat(entry_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(paths.usage_dir).st_mode) == 0o700
    assert usage.record_oom(paths, "k", name="job", claim=GIB, max_rss=GIB, cpu_secs=1,
                            elapsed_secs=1, at=5)
    entry = usage.lookup(paths, "k")
    assert entry is not None and any(s["kind"] == "oom" for s in entry["samples"])


def record(paths: Paths, key: str, at: float, rss: int = MIB) -> bool:
    return usage.record_peak(paths, key, name=key, max_rss=rss, cpu_secs=0, elapsed_secs=1,
                             at=at)


def test_a_corrupt_entry_is_salvaged_and_set_aside(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    paths.usage_dir.mkdir(parents=True)
    (paths.usage_dir / "k.json").write_text(json.dumps(
        {"name": "k", "samples": [{"kind": "peak", "max_rss": 5}, "nope"]}))
    assert usage.lookup(paths, "k") == {"name": "k", "samples": [{"kind": "peak", "max_rss": 5}]}
    assert record(paths, "k", at=1.0)
    entry = usage.lookup(paths, "k")
    assert entry is not None and [s["max_rss"] for s in entry["samples"]] == [5, MIB]
    assert len(list(paths.usage_dir.glob("k.json.corrupt-*"))) == 1
    (paths.usage_dir / "k.json").write_bytes(b"\x00not json")
    assert usage.lookup(paths, "k") is None
    assert record(paths, "k", at=2.0)
    entry = usage.lookup(paths, "k")
    assert entry is not None and [s["at"] for s in entry["samples"]] == [2.0]


def test_an_unreadable_entry_is_left_alone(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    paths.usage_dir.mkdir(parents=True)
    (paths.usage_dir / "k.json").mkdir()  # reading it fails with an error other than "missing"
    assert usage.lookup(paths, "k") is None
    assert not record(paths, "k", at=1.0)
    assert (paths.usage_dir / "k.json").is_dir()


def test_a_key_that_is_not_a_plain_name_never_reaches_the_disk(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    for key in ("", "../escape", "a/b", ".hidden", "x" * 65):
        assert usage.entry_path(paths, key) is None
        assert usage.lookup(paths, key) is None
    assert not record(paths, "../escape", at=1.0)
    assert not (paths.state_dir / "escape.json").exists()


def record_in_order(paths: Paths, keys: list[str]) -> None:
    """Record each command, its file's time one second after the one before (the order of
    use, which the bound reads)."""
    for number, key in enumerate(keys):
        assert record(paths, key, at=float(number))
        entry_file = usage.entry_path(paths, key)
        assert entry_file is not None
        os.utime(entry_file, (1000.0 + number, 1000.0 + number))


def test_the_store_keeps_the_commands_used_last(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage, "MAX_COMMANDS", 3)
    paths = paths_in(tmp_path)
    record_in_order(paths, ["c0", "c1", "c2"])
    assert record(paths, "c0", at=9.0)  # a known command is used again: now the newest
    assert record(paths, "c3", at=10.0)  # a new one pushes out the longest unused
    assert sorted(p.name for p in paths.usage_dir.iterdir()) == ["c0.json", "c2.json", "c3.json"]
    assert record(paths, "c4", at=11.0)
    assert sorted(p.name for p in paths.usage_dir.iterdir()) == ["c0.json", "c3.json", "c4.json"]


def test_the_bound_is_kept_with_room_to_spare(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound the store drops to a tenth below it, so the next new commands do not
    each pay for reading every file's time."""
    monkeypatch.setattr(usage, "MAX_COMMANDS", 20)
    paths = paths_in(tmp_path)
    record_in_order(paths, [f"c{number:02}" for number in range(21)])
    assert sorted(p.name for p in paths.usage_dir.iterdir()) == \
        [f"c{number:02}.json" for number in range(3, 21)]


def test_the_single_file_store_is_read_then_split_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage, "MAX_COMMANDS", 2)
    paths = paths_in(tmp_path)
    paths.state_dir.mkdir(parents=True)
    old = {"commands": {
        "old": {"name": "a", "samples": [{"kind": "peak", "max_rss": 5, "at": 10.0}]},
        "mid": {"name": "b", "samples": [{"kind": "peak", "max_rss": 6, "at": 20.0}]},
        "new": {"name": "c", "samples": [{"kind": "peak", "max_rss": 7, "at": 30.0}]},
        "bad": {"name": "d", "samples": "nope"},
    }}
    paths.usage_file.write_text(json.dumps(old))
    # Until a job ends, lookups read the old store as it is.
    assert usage.lookup(paths, "old") == old["commands"]["old"]
    assert usage.lookup(paths, "bad") is None
    assert record(paths, "mid", at=40.0)
    assert not paths.usage_file.exists()
    assert json.loads((paths.state_dir / "usage.json.migrated").read_text()) == old
    assert sorted(p.name for p in paths.usage_dir.iterdir()) == ["mid.json", "new.json"]
    assert usage.lookup(paths, "old") is None  # the bound kept the two used last
    mid = usage.lookup(paths, "mid")
    assert mid is not None and [s["max_rss"] for s in mid["samples"]] == [6, MIB]
    new_file = usage.entry_path(paths, "new")
    assert new_file is not None and new_file.stat().st_mtime == 30.0
    assert usage.lookup(paths, "new") == old["commands"]["new"]


def test_a_store_an_older_qex_wrote_again_is_merged(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    assert record(paths, "mine", at=50.0, rss=1) and record(paths, "theirs", at=50.0, rss=2)
    paths.usage_file.write_text(json.dumps({"commands": {
        "mine": {"name": "mine", "samples": [{"kind": "peak", "max_rss": 3, "at": 40.0}]},
        "theirs": {"name": "theirs", "samples": [{"kind": "peak", "max_rss": 4, "at": 60.0}]},
    }}))
    assert record(paths, "other", at=70.0)
    mine, theirs = usage.lookup(paths, "mine"), usage.lookup(paths, "theirs")
    assert mine is not None and [s["max_rss"] for s in mine["samples"]] == [1]
    assert theirs is not None and [s["max_rss"] for s in theirs["samples"]] == [4]


def test_a_single_file_store_that_does_not_parse_is_kept_aside(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    paths.state_dir.mkdir(parents=True)
    paths.usage_file.write_bytes(b"\x00not json")
    assert usage.lookup(paths, "k") is None
    assert record(paths, "k", at=1.0)
    assert (paths.state_dir / "usage.json.migrated").read_bytes() == b"\x00not json"
    assert [p.name for p in paths.usage_dir.iterdir()] == ["k.json"]
