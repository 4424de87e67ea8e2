"""Id files: formats, atomic writes, and the warning for places that do not last."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path, PurePosixPath

from hypothesis import example, given
from hypothesis import strategies as st

from qex.cli import idfile
from qex.cli.idfile import (
    SCRATCH_PARTS,
    group_text,
    scratch_warning,
    shell_names,
    single_text,
    write,
)


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


# -- the scratch check without `pathlib` ------------------------------------------------------

SEGMENTS = st.sampled_from(["tmp", "var", "scratch", "Scratchpad", "x", "..", ".", "", "run",
                            "user", "1", "home"])
PATHS = st.builds(lambda lead, parts: lead + "/".join(parts),
                  st.sampled_from(["", "/", "//", "///"]), st.lists(SEGMENTS, max_size=5))


def _pathlib_warning(path: str, env: dict[str, str]) -> bool:
    """Whether the check warns, decided with `pathlib` as it was before the lean path."""
    target = Path(os.path.abspath(path))
    candidates = {target.parent, Path(os.path.realpath(target.parent))}
    roots = [Path("/tmp"), Path("/var/tmp")] + [Path(env[v]) for v in
                                                ("TMPDIR", "CLAUDE_JOB_DIR", "XDG_RUNTIME_DIR")
                                                if env.get(v)]

    def under(inner: Path, outer: Path) -> bool:
        try:
            inner.relative_to(outer)
        except ValueError:
            return False
        return True

    for root in roots:
        if any(under(c, r) for c in candidates for r in {root, Path(os.path.realpath(root))}):
            return True
    return any(part.lower() in SCRATCH_PARTS for c in candidates for part in c.parts)


@given(PATHS)
def test_the_parts_are_the_parts_of_pathlib(text: str) -> None:
    assert idfile._parts(text) == PurePosixPath(text).parts


@given(PATHS.filter(bool), st.dictionaries(st.sampled_from(["TMPDIR", "XDG_RUNTIME_DIR"]), PATHS))
@example("..", {"TMPDIR": "."})
def test_the_scratch_check_decides_as_pathlib_did(path: str, env: dict[str, str]) -> None:
    assert (scratch_warning(path, env) is not None) == _pathlib_warning(path, env)
