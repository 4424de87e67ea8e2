"""The fast path (no click) against the click commands: one table, the same results.

`qex.cli.fast_table` is generated from the click commands; these tests fail when it is out of
date, when the fast parser gives other values than click for an argument list it accepts,
and when the click-free helpers (selection, spec options, wire format, socket path) differ
from the code the click path runs.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.cli import fast, fastargs, fastgen, wire
from qex.cli.main import COMMANDS
from qex.core import protocol
from qex.store.paths import Paths


def _click_params(command: str, args: list[str]) -> dict[str, Any] | None:
    cmd = fastgen.click_command(command)
    try:
        ctx = cmd.make_context(command.rpartition(" ")[2], list(args))
    except click.ClickException:
        return None
    return dict(ctx.params)


def test_the_generated_table_is_up_to_date() -> None:
    assert fastgen.TABLE_PATH.read_text() == fastgen.render(), (
        "qex/cli/fast_table.py is out of date: run `python -m qex.cli.fastgen`")


def test_every_hot_command_has_a_handler() -> None:
    assert set(fastgen.HOT) == set(fast.HANDLERS)


def test_every_subcommand_in_the_table_is_one_of_its_group() -> None:
    """`pause queue` and `config show` are found by their two words: each names a group of
    the application and one of its subcommands. A group with options of its own (`pause`)
    has an entry too; one without (`config`, `coordinator`) needs none, and its words alone
    go to click."""
    for name in fastgen.HOT:
        group, _, sub = name.partition(" ")
        if sub:
            command = importlib.import_module(COMMANDS[group][0]).command
            assert isinstance(command, click.Group), name
            assert sub in command.commands, name
            assert command.params == [] or group in fastgen.HOT, name


ID = "0b1c2d3e-4f50-4617-8899-aabbccddeeff"

#: Argument lists the fast parser must accept, and parse exactly as click does.
ACCEPTED = [
    ("submit", ["--", "true"]),
    ("submit", ["true"]),
    ("submit", ["--cpu", "2", "--mem", "1GB", "--", "sh", "-c", "exit 3"]),
    ("submit", ["--cpu=2", "--name", "x", "--tag", "a", "--tag", "b", "echo", "--wait"]),
    ("submit", ["--wait", "-q", "--", "true"]),
    ("submit", ["--json", "--priority", "-5", "--", "true"]),
    ("submit", ["--retries", "0", "--nice", "3", "--env", "A=1", "--env", "B=2", "--", "x"]),
    ("submit", ["--lock", "gpu0", "--claim", "gpu=1", "--no-env-capture", "--", "x"]),
    ("submit", ["--wait", "--wait-timeout", "5s", "--id-file", "/tmp/x.json", "--", "x"]),
    ("submit", ["--dedupe-key", "k", "--dedupe-window", "1h", "--", "x", "--", "y"]),
    ("wait", [ID]),
    ("wait", [ID, "--json", "abc"]),
    ("wait", ["-q", "--timeout", "3s", ID]),
    ("wait", ["--next", "a", "b"]),
    ("status", [ID]),
    ("status", [ID, "--json"]),
    ("status", ["--json", ID]),
    ("status", ["--wait", ID, "--timeout=2s"]),
    ("status", [ID, "--tail", "5", "-C", "2", "--grep", "x", "-n"]),
    ("status", ["--no-logs", "--show-env", ID]),
    ("list", []),
    ("list", ["--json"]),
    ("list", ["--state", "queued", "--state", "done", "--tag", "t", "--group", "g"]),
    ("list", ["--cwd"]),
    ("list", ["--cwd", "--json"]),
    ("list", ["--under", "/tmp"]),
    ("list", ["--cwd=/tmp", "--under"]),
    ("list", ["--cwd", ".", "--under", "-"]),
    ("list", ["--json", "--under", "--"]),
    ("list", ["--cwd="]),
    ("logs", [ID]),
    ("logs", [ID, "--stdout", "--head", "3"]),
    ("logs", ["-f", ID]),
    ("logs", [ID, "--json", "--all", "--max-matches", "4", "--grep", "e", "--fixed"]),
    ("kill", [ID]),
    ("kill", [ID, "--signal", "KILL", "--grace", "0", "abc"]),
    ("kill", ["--signal=INT", ID]),
    ("cancel", [ID, "abc"]),
    ("cancel", ["--", "-odd-name"]),
    ("pause", []),
    ("pause", ["--json"]),
    ("pause queue", ["--reason", "nightly build", "--for", "2h", "--json"]),
    ("pause queue", ["--drain"]),
    ("pause lock", ["gpu0", "--for=30m"]),
    ("pause lock", ["--reason", "mine", "--", "-odd-lock"]),
    ("resume", ["--json"]),
    ("resume queue", []),
    ("resume lock", ["target/debug", "--json"]),
    ("version", []),
    ("version", ["--json"]),
    ("help", []),
    ("help", ["agents"]),
    ("watchers", ["--json"]),
    ("config show", []),
    ("config show", ["--json"]),
    ("config path", []),
    ("du", ["--top", "0", "--json"]),
    ("du", ["--top=3"]),
    ("gc", ["--older-than", "2d", "--dry-run"]),
    ("gc", ["--json", "--older-than=0"]),
    ("coordinator stop", []),
    ("coordinator restart", []),
    ("schema", []),
    ("schema", ["status"]),
]

#: Forms the fast parser must hand to click (which prints its own usage message).
REFUSED = [
    ("submit", ["--help"]),
    ("submit", ["--bogus", "--", "true"]),
    ("submit", ["--retries", "-1", "--", "x"]),
    ("submit", ["--priority", "many", "--", "x"]),
    ("submit", ["--cpu"]),
    ("submit", ["--wait=yes", "--", "x"]),
    ("submit", ["--max-jobs", "0", "--", "x"]),
    ("wait", []),
    ("wait", ["-qj", ID]),
    ("status", []),
    ("status", [ID, ID]),
    ("status", [ID, "--tail", "-1"]),
    ("list", ["extra"]),
    ("list", ["--cwd", "-x"]),
    ("logs", [ID, "-C"]),
    ("kill", []),
    ("cancel", ["-h"]),
    ("pause", ["queue"]),  # a subcommand word is found before the group's table is read
    ("pause", ["--json", "queue"]),
    ("pause queue", ["--for"]),
    ("pause queue", ["extra"]),
    ("pause lock", []),
    ("pause lock", ["a", "b"]),
    ("resume lock", ["--help"]),
    ("version", ["--bogus"]),
    ("help", ["agents", "states"]),
    ("help", ["--help"]),
    ("watchers", ["extra"]),
    ("config show", ["--bogus"]),
    ("config path", ["x"]),
    ("du", ["--top", "-1"]),
    ("du", ["--top"]),
    ("gc", ["--older-than"]),
    ("coordinator stop", ["now"]),
    ("schema", ["status", "event"]),
]


@pytest.mark.parametrize(("command", "args"), ACCEPTED)
def test_the_fast_parser_gives_what_click_gives(command: str, args: list[str]) -> None:
    mine = fastargs.parse(command, args)
    assert mine is not None, f"the fast parser refused {command} {args}"
    assert mine == _click_params(command, args)


@pytest.mark.parametrize(("command", "args"), REFUSED)
def test_the_fast_parser_leaves_what_it_does_not_know_to_click(
        command: str, args: list[str]) -> None:
    assert fastargs.parse(command, args) is None


WORDS = st.sampled_from([
    "--", "--json", "-q", "--quiet", "--wait", "--cpu", "--tag", "--timeout", "--tail", "-C",
    "--state", "--signal", "--grace", "-n", "-f", "--stdout", "--next", "--help", "3", "-3",
    "x", ID, "--cpu=2", "--tail=0", "2s", "-", "--bogus", "queued", "--cwd", "--under",
    "--cwd=.", "/tmp",
])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(fastgen.HOT), st.lists(WORDS, max_size=6))
def test_whenever_the_fast_parser_answers_it_agrees_with_click(
        command: str, args: list[str]) -> None:
    mine = fastargs.parse(command, args)
    if mine is not None:
        assert mine == _click_params(command, args)


def test_spec_options_are_the_click_path_submit_options() -> None:
    from qex.cli.submitting import submit_options_from
    from qex.core.jobspec import SubmitOptions

    args = ["--cpu", "2", "--mem", "1GB", "--tag", "a", "--lock", "l", "--claim", "gpu=1",
            "--env", "A=1", "--priority", "4", "--retries", "2", "--nice", "1", "--name", "n",
            "--timeout", "5m", "--max-queue-time", "1h", "--no-limit-env-hints",
            "--env-capture", "minimal", "--dedupe-key", "k", "--", "echo", "hi"]
    params = fastargs.parse("submit", args)
    assert params is not None
    assert SubmitOptions(**fast.spec_options(params)) == submit_options_from(params)


def test_every_spec_option_is_a_field_the_coordinator_accepts() -> None:
    from qex.coordinator.submit_words import OPTION_FIELDS

    params = fastargs.parse("submit", ["--", "true"])
    assert params is not None
    assert set(fast.spec_options(params)) == OPTION_FIELDS


@pytest.mark.parametrize("args", [
    [], ["--tail", "3"], ["--head", "2", "-n"], ["--lines", "2:5"], ["--grep", "x", "-C", "1"],
    ["--grep", "x", "--fixed", "--max-matches", "2"], ["--all"],
])
def test_the_fast_selection_is_the_click_selection(args: list[str]) -> None:
    from qex.cli.log_options import selection_from

    params = fastargs.parse("logs", [ID, *args])
    assert params is not None
    assert fast.selection(params) == selection_from(params)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), JSON, max_size=4))
def test_the_wire_writes_and_reads_what_the_protocol_does(message: dict[str, Any]) -> None:
    line = wire.encode(message)
    assert line == protocol.encode(message)
    assert wire.decode(line.rstrip(b"\n")) == json.loads(line)


@pytest.mark.parametrize("line", [b"", b"[1]", b"{", b"{} x", b"\xff", b"nul"])
def test_the_wire_gives_up_on_what_is_not_one_object(line: bytes) -> None:
    assert wire.decode(line) is None


def test_the_wire_gives_up_where_json_was_never_imported() -> None:
    """The lean commands never import `json`, and without `json.decoder` loaded the C
    scanner meets a broken text with no exception to raise (a SystemError). The module is
    taken out of `sys.modules` where a start-up hook loaded it (coverage's, under CI)."""
    script = (
        "import sys\n"
        "sys.modules.pop('json.decoder', None)\n"
        "from qex.cli import wire\n"
        "lines = [b'', b' ', b'{', b'{\"id\": \"cut sh', b'[1, {\"a\"', b'{\"a\": tru}']\n"
        "print([wire.decode(line) for line in lines], wire.decode_array(b'[{\"a\": 1},]'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[None,", "None,", "None,", "None,", "None,", "None]", "None"]


@pytest.mark.parametrize("env", [
    {"HOME": "/home/a"},
    {"HOME": "/home/a", "XDG_STATE_HOME": "/var/st"},
    {"XDG_STATE_HOME": "/tmp/qx1/state", "XDG_CONFIG_HOME": "/c", "HOME": ""},
    {"XDG_STATE_HOME": "relative/state", "HOME": "/h"},
    {"HOME": "/home/a/"},
])
def test_the_wire_finds_the_socket_where_paths_does(env: dict[str, str]) -> None:
    found = wire.socket_path(env)
    assert found is not None
    assert Path(found) == Paths.from_env(env).socket_path
    assert Path(str(wire.state_dir(env))) == Paths.from_env(env).state_dir


@pytest.mark.parametrize("env", [
    {}, {"HOME": ""}, {"XDG_STATE_HOME": "/s"}, {"HOME": "/h", "XDG_STATE_HOME": "/" + "d" * 120},
])
def test_the_wire_leaves_unusual_socket_paths_to_the_full_client(env: dict[str, str]) -> None:
    assert wire.socket_path(env) is None


NAMES = st.text(alphabet="abcXYZ019._- é/$", max_size=70)
RECORDS = st.fixed_dictionaries({
    "id": st.just(ID),
    "name": st.one_of(st.none(), NAMES),
    "state": st.sampled_from(["completed", "failed", "killed", "running", "queued", "oom"]),
    "exit_code": st.one_of(st.none(), st.integers(-3, 300)),
    "signal": st.one_of(st.none(), st.integers(1, 15)),
    "error": st.one_of(st.none(), st.just(""), st.just("it broke")),
})


@settings(max_examples=300, deadline=None)
@given(RECORDS)
def test_the_lean_wait_prints_what_the_full_wait_prints(record: dict[str, Any]) -> None:
    from qex.cli import fastwait
    from qex.cli.jobcmd import result_line
    from qex.core.states import exit_code_for

    found = fastwait.simple_result(record)
    if found is not None:
        assert found == (result_line(record), exit_code_for(record))


def test_the_lean_wait_takes_only_full_ids() -> None:
    from qex.cli.fastwait import is_full_id

    assert is_full_id(ID)
    assert not is_full_id(ID[:8])
    assert not is_full_id(ID.upper())
    assert not is_full_id("my-job")
