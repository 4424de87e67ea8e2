"""Id files: formats, atomic writes, and the warning for places that do not last."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from qex.cli.idfile import group_text, scratch_warning, shell_names, single_text, write


def test_single(tmp_path: Path) -> None:
    path = tmp_path / "job.id"
    write(path, single_text("abc"))
    assert path.read_text() == "abc\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["job.id"]


def test_group_env_and_json(tmp_path: Path) -> None:
    jobs = [("build", "1"), ("unit-test", "2"), ("9lives", "3"), ("group", "4"), ("unit_test", "5")]
    text = group_text(tmp_path / "ids.env", "G", "ci", jobs)
    assert text.splitlines() == ["group=G", "build=1", "unit_test=2", "_9lives=3", "group_2=4",
                                 "unit_test_2=5"]
    data = json.loads(group_text(tmp_path / "ids.json", "G", "c i", jobs[:2]))
    assert data == {"group": "G", "group_name": "c_i", "jobs": {"build": "1", "unit-test": "2"}}


def test_shell_names_are_identifiers() -> None:
    for ident in shell_names(["a-b", "", "x y", "é"]):
        assert ident.replace("_", "a").isalnum()
        assert not ident[0].isdigit()


def test_scratch_warning(tmp_path: Path) -> None:
    env = {"TMPDIR": str(tmp_path / "t"), "XDG_RUNTIME_DIR": "/run/user/1"}
    message = scratch_warning(Path("/tmp/x/job.id"), env)
    assert message is not None and "does not last" in message
    assert scratch_warning(tmp_path / "t" / "job.id", env) is not None
    assert scratch_warning(Path("/home/me/project/scratch/job.id"), {}) is not None
    assert scratch_warning(Path("/home/me/project/job.id"), {}) is None
