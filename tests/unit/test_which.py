"""`qex.platform.which` finds what `shutil.which` finds, for any PATH and any name."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.platform.which import which

KINDS = ("program", "plain file", "directory", "missing", "link to program")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four directories, each with one entry of each kind under the name `tool`."""
    root = tmp_path_factory.mktemp("which")
    for index, kind in enumerate(KINDS):
        directory = root / f"d{index}"
        directory.mkdir()
        entry = directory / "tool"
        if kind == "program":
            entry.write_text("#!/bin/sh\n")
            entry.chmod(stat.S_IRWXU)
        elif kind == "plain file":
            entry.write_text("data\n")
        elif kind == "directory":
            entry.mkdir()
        elif kind == "link to program":
            entry.symlink_to(root / "d0" / "tool")
    return root


@settings(max_examples=200, deadline=None)
@given(order=st.lists(st.sampled_from(range(len(KINDS) + 1)), max_size=6),
       name=st.sampled_from(["tool", "other", "d0/tool"]))
def test_the_same_program_as_shutil(tree: Path, order: list[int], name: str) -> None:
    """Directories in any order, repeated, or missing (the last index names none)."""
    path = os.pathsep.join(str(tree / f"d{i}") for i in order)
    assert which(name, path) == shutil.which(name, path=path)


def test_a_name_with_a_slash_is_checked_as_it_is(tree: Path) -> None:
    assert which(str(tree / "d0" / "tool"), "") == str(tree / "d0" / "tool")
    assert which(str(tree / "d1" / "tool"), "") is None
    assert which(str(tree / "d2" / "tool"), "") is None
