"""The layer table of docs/design.md, held against every import in the code (also the ones
inside functions), and the import cycles that the table forbids."""

from __future__ import annotations

import ast
from pathlib import Path

import qex

ROOT = Path(qex.__file__).parent

#: package -> the other packages of qex it may import (docs/design.md, "Layers in the code").
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "store": {"core"},
    "platform": {"core"},
    "coordinator": {"core", "store", "platform", "engine"},
    "supervisor": {"core", "store", "platform"},
    "client": {"core", "store", "platform"},
    "cli": {"core", "store", "client", "platform"},
    "engine": {"core", "store", "platform", "coordinator", "supervisor"},
    "testing": {"core", "platform"},
}
#: The entries of the two roles: the only CLI modules that reach them, and the coordinator's
#: module that forks the supervisor fork server (its child runs that server's entry).
ENTRIES = {"cli/commands/daemon.py": "coordinator", "cli/commands/supervise.py": "supervisor",
           "cli/daemon_start.py": "coordinator", "coordinator/forking.py": "supervisor"}
#: Known exceptions, each to be removed: the scripted sandbox, taken only when a test sets
#: QEX_TEST_SANDBOX.
EXCEPTIONS = {("supervisor/main.py", "testing")}


def imports(path: Path) -> set[str]:
    """Every qex module that `path` imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("qex.")}


def package_of(module: str) -> str | None:
    part = module.split(".")[1]
    return part if (ROOT / part).is_dir() else None


def test_every_import_follows_the_layer_table() -> None:
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "/" not in rel:
            continue  # qex/__init__.py and qex/__main__.py: the entry point
        own = rel.split("/")[0]
        for module in imports(path):
            other = package_of(module)
            if other is None or other == own:
                continue
            if (other not in ALLOWED[own] and ENTRIES.get(rel) != other
                    and (rel, other) not in EXCEPTIONS):
                wrong.append(f"{rel} imports {module}")
    assert wrong == []


def test_the_cycles_that_were_removed_stay_removed() -> None:
    def uses(module: str, target: str) -> bool:
        path = ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py")
        return any(name == target or name.startswith(target + ".") for name in imports(path))

    assert not uses("qex.coordinator.runner", "qex.coordinator.main")
    assert not uses("qex.supervisor.main", "qex.supervisor.forkserver")
    for path in (ROOT / "client").glob("*.py"):
        assert not any(name.startswith("qex.cli.") for name in imports(path)), path


def test_the_design_page_shows_the_client_layer() -> None:
    docs = ROOT.parent / "docs" / "design.md"
    if not docs.exists():
        return  # an installed copy without the docs
    text = docs.read_text()
    for package in ALLOWED:
        assert f"`qex/{package}/`" in text, package
