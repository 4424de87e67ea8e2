"""The garbage collector held while a qex process starts (`qex.platform.collector`).

The helper's own rules, then each process that holds it, run for real in a fresh interpreter
(a hold changes the whole process, so none of it runs inside pytest's): a coordinator that
serves with its collector on and its start frozen, after no collection during that start;
a command on the full path that releases it, and `main` called by another program, which
must leave that program's collector alone. The fork server's release is checked with its
rehearsal (`test_chain.py`), a supervisor's with a job (`tests/e2e/test_supervisor_direct.py`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import run_probe

from qex.platform import collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    """Whatever a test does to the collector, pytest's own process gets it back as it was."""
    enabled = gc.isenabled()
    yield None
    collector._held = False
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_a_hold_stops_collections_until_its_release_freezes_the_start(
        restored_collector: None) -> None:
    gc.enable()
    gc.unfreeze()
    collector.hold()
    assert not gc.isenabled()
    made = [[] for _ in range(1000)]  # what a start makes and keeps
    collector.release()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)
    frozen = gc.get_freeze_count()
    collector.release()  # a second release changes nothing
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_collector_that_was_off_stays_off(restored_collector: None) -> None:
    gc.disable()
    gc.unfreeze()
    collector.hold()
    collector.release()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_release_without_a_hold_changes_nothing(restored_collector: None) -> None:
    gc.enable()
    gc.unfreeze()
    collector.release()
    assert gc.isenabled() and gc.get_freeze_count() == 0


_COORDINATOR_PROBE = """
import gc, json, sys
from qex.coordinator import runner
from qex.platform import collector

seen = {}
hold = collector.hold

def counted_hold():
    hold()
    seen["collections_at_hold"] = sum(s["collections"] for s in gc.get_stats())

async def serve_once(self):
    seen["enabled"] = gc.isenabled()
    seen["frozen"] = gc.get_freeze_count()
    seen["collections_at_serve"] = sum(s["collections"] for s in gc.get_stats())

collector.hold = counted_hold
runner.Runner.run = serve_once
from qex.cli.daemon_start import run_daemon
try:
    run_daemon(detached=True)
finally:
    with open(sys.argv[1], "w") as out:
        json.dump(seen, out)
"""


def test_the_coordinator_starts_without_collections_and_serves_collecting(
        tmp_path: Path) -> None:
    # The start's imports and recovery run with the collector held; once the coordinator
    # serves, the collector runs again and the start's objects are frozen out of its walks.
    seen = run_probe(tmp_path, _COORDINATOR_PROBE)
    assert seen["enabled"] is True
    assert seen["frozen"] > 1000  # the modules and what the start made
    assert seen["collections_at_serve"] == seen["collections_at_hold"]


_COMMAND_PROBE = """
import gc, json, os, sys
from qex.cli import main

os.environ["QEX_NO_FAST_PATH"] = "1"  # a form of the full path, whichever that is today

def run(own):
    gc.unfreeze()
    main.OWN_PROCESS = own
    try:
        main.main(["config", "path"])
    except SystemExit:
        pass
    return {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}

found = {"embedded": run(False), "own": run(True)}
with open(sys.argv[1], "w") as out:
    json.dump(found, out)
"""


def test_a_command_on_the_full_path_releases_the_collector_and_an_embedder_keeps_its_own(
        tmp_path: Path) -> None:
    found = run_probe(tmp_path, _COMMAND_PROBE)
    # Called by another program: its collector and its heap are left as they were.
    assert found["embedded"] == {"enabled": True, "frozen": 0}
    # Its own process: held for the imports, then released (the imports frozen).
    assert found["own"]["enabled"] is True
    assert found["own"]["frozen"] > 1000


_FORK_SERVER_PROBE = """
import gc, json, sys
from qex.platform import collector
from qex.supervisor import forkserver
from qex.supervisor.__main__ import entry

seen = {}

def serve():
    seen["enabled"] = gc.isenabled()
    seen["frozen"] = gc.get_freeze_count()
    return 0

forkserver.serve = serve
collector.hold()  # as a server forked from a starting coordinator inherits it
seen["code"] = entry(["--forkserver"])
with open(sys.argv[1], "w") as out:
    json.dump(seen, out)
"""


def test_a_fork_server_forked_from_a_starting_coordinator_imports_with_the_collector_on(
        tmp_path: Path) -> None:
    # The server never holds the collector: its supervisors share its heap, and a preload
    # made with it held left each of them more private memory. It ends an inherited hold
    # before its own imports, and freezes nothing then (its preload collects and freezes).
    assert run_probe(tmp_path, _FORK_SERVER_PROBE) == {"enabled": True, "frozen": 0, "code": 0}
