"""The benchmark's chain reader pairs each start with the end that freed its slot."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qex_bench_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_trace(path: Path, marks: list[tuple[float, str, str]]) -> None:
    """Lines as `qex.platform.chaintrace` writes them; times in ms here, ns on disk."""
    path.write_text("".join(f"{int(ms * 1e6)} 1 {job} {step}\n" for ms, job, step in marks))


def job_marks(job: str, start: float, ended: float) -> list[tuple[float, str, str]]:
    return [(start, job, "co.start"), (start + 1.0, job, "sup.exec"),
            (ended, job, "sup.ended"), (ended + 0.5, job, "co.ending")]


def test_two_slots_pair_each_start_with_its_own_end(tmp_path: Path) -> None:
    bench = load_bench()
    trace = tmp_path / "chain.trace"
    # a and b fill both slots at the resume; both end close together, then c and d start.
    write_trace(trace, [*job_marks("a", 0.0, 50.0), *job_marks("b", 0.2, 51.0),
                        *job_marks("c", 52.0, 110.0), *job_marks("d", 54.0, 112.0),
                        (50.6, "-", "co.tick"), (51.6, "-", "co.tick")])
    steps, whole = bench.read_chain(trace)
    # a's end (50.0) to c's exec (53.0), b's end (51.0) to d's exec (55.0); a and b have
    # no end before them, and c and d free no slot that a later start takes.
    assert whole == [3.0, 4.0]
    assert steps["coordinator: loop wakes"] == [0.1, 0.1]


def test_one_slot_pairs_consecutive_jobs(tmp_path: Path) -> None:
    bench = load_bench()
    trace = tmp_path / "chain.trace"
    write_trace(trace, [*job_marks("a", 0.0, 10.0), *job_marks("b", 11.0, 20.0),
                        *job_marks("c", 21.5, 30.0)])
    _steps, whole = bench.read_chain(trace)
    assert whole == [2.0, 2.5]


def test_the_pool_row_shows_what_qex_adds_to_a_bare_pool(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """200 jobs of 50 ms: ideal 5 s; a pool that took 5.2 s and qex 5.8 s means 6 ms per job
    and slot that qex adds (0.6 s over 100 jobs per slot)."""
    bench = load_bench()
    asked: list[tuple[int, list[str]]] = []

    def pool(count: int, argv: list[str], workers: int = 2) -> float:
        asked.append((count, argv))
        return 5.2

    monkeypatch.setattr(bench, "pool_drain", pool)
    bench.pool_row(200, 5.8, ["sleep", "0.05"])
    shown = capsys.readouterr().out
    assert asked == [(200, ["sleep", "0.05"])]
    assert "5.20 s (x1.04 ideal)" in shown
    assert "qex adds 6.0 ms per job and slot" in shown and "x1.12" in shown
