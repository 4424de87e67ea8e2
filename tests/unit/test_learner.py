"""The learner: keys, pruning, suggestions (pure) and the usage.json store."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

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
    assert stat.S_IMODE(os.stat(paths.usage_file).st_mode) == 0o600
    assert usage.record_oom(paths, "k", name="job", claim=GIB, max_rss=GIB, cpu_secs=1,
                            elapsed_secs=1, at=5)
    entry = usage.lookup(paths, "k")
    assert entry is not None and any(s["kind"] == "oom" for s in entry["samples"])


def test_a_corrupt_store_is_salvaged_and_set_aside(tmp_path: Path) -> None:
    paths = paths_in(tmp_path)
    paths.state_dir.mkdir(parents=True)
    paths.usage_file.write_text(json.dumps({"commands": {
        "good": {"name": "a", "samples": [{"kind": "peak", "max_rss": 5}]},
        "bad": {"name": "b", "samples": "nope"},
    }}))
    assert usage.record_peak(paths, "new", name="n", max_rss=1, cpu_secs=0, elapsed_secs=0, at=0)
    data = json.loads(paths.usage_file.read_text())
    assert set(data["commands"]) == {"good", "new"}
    assert list(paths.state_dir.glob("usage.json.corrupt-*"))
    paths.usage_file.write_bytes(b"\x00not json")
    assert usage.record_peak(paths, "again", name="n", max_rss=1, cpu_secs=0, elapsed_secs=0, at=0)
    assert set(json.loads(paths.usage_file.read_text())["commands"]) == {"again"}
