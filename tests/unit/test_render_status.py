"""The status record as text and JSON: never a limit that was not applied, safe text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qex.cli.render_status import status_json, status_text
from qex.cli.status_print import load_excerpts
from qex.core.record_view import typed

BASE: dict[str, Any] = {
    "id": "aaaaaaaa-1111-4111-8111-111111111111", "name": "train\x1b[2J", "state": "failed",
    "command": ["python", "-c", "print(1)\n"], "cwd": "/w", "cpu": 2, "mem": 1024**3,
    "claim_source": "learned", "exit_code": 3, "submitted_at": 0.0, "started_at": 10.0,
    "finished_at": 70.0, "usage": {"max_rss": 512 * 1024**2, "cpu_secs": 12.5},
    "error": "bad\x07 thing", "tags": ["x y"], "needs": ["bbbbbbbb-2222-4222-8222-222222222222"],
}


def lines_of(record: dict[str, Any]) -> list[str]:
    return status_text(typed(record), now=100.0).splitlines()


def test_labels_and_safe_text() -> None:
    text = status_text(typed(BASE), now=100.0)
    assert "name:      train_2J" in text
    assert "\x1b" not in text and "\x07" not in text
    assert "command:   python -c print(1)\\n" in text
    assert "exit code: 3" in text
    assert "claim:     2 core(s), 1GB  (from the earlier jobs of this command)" in text
    assert "50% of its memory claim" in text
    assert "ran for 1m" in text
    assert "needs:     bbbbbbbb" in text
    assert "tags:      x_y" in text


def test_memory_line_only_for_an_applied_limit() -> None:
    assert not any(line.startswith("memory:") for line in lines_of(BASE))
    off = {**BASE, "enforcement": {"mode": "off", "active": False}}
    assert not any(line.startswith("memory:") for line in lines_of(off))
    hard = {**BASE, "enforcement": {"mode": "hard", "active": True, "memory_max": 1024**3}}
    assert "memory:    limited to 1GB (hard)" in lines_of(hard)
    wanted = {**BASE, "enforcement": {"mode": "hard", "active": False, "memory_max": 1024**3,
                                      "reason": "no delegated cgroup"}}
    line = next(line for line in lines_of(wanted) if line.startswith("memory:"))
    assert "NOT limited" in line and "NOT ACTIVE" in line and "limited to" not in line


def test_queued_job_says_why() -> None:
    queued = {**BASE, "state": "queued", "blocked_reason": "waits for the lock `db`",
              "exit_code": None, "finished_at": None, "started_at": None}
    text = status_text(typed(queued), now=30.0)
    assert "waits for: waits for the lock `db`" in text
    assert "queued for 30s" in text


def test_json_is_display_safe_with_env_and_logs(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_text("".join(f"e{i}\n" for i in range(30)))
    (tmp_path / "stdout.log").write_text("o1\no2\n")
    excerpts = load_excerpts(tmp_path, typed(BASE), sel=None)
    assert [e.stream for e in excerpts] == ["stderr", "stdout"]
    assert excerpts[0].selected.lines == [f"e{i}" for i in range(20, 30)]
    data = status_json(BASE, env={"K": "v\n"}, excerpts=excerpts)
    assert data["name"] == "train_2J"
    assert data["env"] == {"K": "v\\n"}
    assert data["logs"]["stderr"]["hidden_lines"] == 20
    assert data["logs"]["stdout"]["text"] == "o1\no2\n"


def test_no_excerpts_for_a_completed_job(tmp_path: Path) -> None:
    (tmp_path / "stdout.log").write_text("fine\n")
    assert load_excerpts(tmp_path, typed({**BASE, "state": "completed"}), sel=None) == []
    assert load_excerpts(tmp_path, typed({**BASE, "state": "running"}), sel=None) == []
