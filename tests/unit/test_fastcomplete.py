"""Tab presses answered without click (`qex.cli.fastcomplete`) against click's own answers.

The comparison runs in a new interpreter: click keeps each command's help option from the
first context that asks for it, and other tests in this process make contexts without `-h`.
There, hypothesis draws command lines from the words of every command (subcommands, option
names, values, `--`, stray words), and every line the fast path answers must get click's
candidates, in click's order. A fixed list of common lines must be answered by the fast path
at all, so that the comparison cannot pass by stepping aside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.cli import complete_tree, fastcomplete, fastgen

SAME_CLICK = fastgen.click_release() == complete_tree.CLICK

#: Job records on disk for the id candidates: (id, name, state, submitted_at).
JOBS = [
    ("11111111-aaaa-4aaa-8aaa-111111111111", "build", "completed", 100.0),
    ("22222222-bbbb-4bbb-8bbb-222222222222", "test run", "running", 200.0),
    ("23333333-cccc-4ccc-8ccc-333333333333", "deploy", "queued", 300.0),
    ("44444444-dddd-4ddd-8ddd-444444444444", "build", "failed", 400.0),
]

_COMPARE = r"""
import json, sys
from hypothesis import HealthCheck, given, settings, strategies as st
from click.shell_completion import ShellComplete
from qex.cli.app import cli
from qex.cli import fastcomplete
from qex.cli.complete_tree import TREE

exact = sys.argv[1] == "exact"
fixed = json.loads(sys.argv[2])
examples = int(sys.argv[3])

def clicks(args, incomplete):
    completer = ShellComplete(cli, {}, "qex", "_QEX_COMPLETE")
    items = completer.get_completions(list(args), incomplete)
    if exact:
        return [[i.type, i.value, i.help] for i in items]
    return sorted([i.type, i.value] for i in items)

def fasts(args, incomplete):
    items = fastcomplete.complete(list(args), incomplete)
    if items is None:
        return None
    return [list(i) for i in items] if exact else sorted(list(i[:2]) for i in items)

mismatches = []
unanswered = []
for args, incomplete in fixed:
    fast = fasts(args, incomplete)
    if fast is None:
        unanswered.append([args, incomplete])
    elif fast != clicks(args, incomplete):
        mismatches.append([args, incomplete, fast, clicks(args, incomplete)])

paths = sorted(TREE, key=len)
common = ["--", "-", "x", "1", "=", "-x", "--nope", "a=b", "--cpu=2", "-qn", "2h", "11111111",
          "build", "BASH", "Agents", "./dir"]

def local(path):
    # The words of one command (most lines stay within what the fast path follows), the
    # words of the others, and stray ones.
    entry = TREE[path]
    own = sorted({n for o in entry["options"] for n in o[0]}
                 | {n for n, _ in entry["commands"]} | set(entry["hidden"]))
    others = sorted({w for key in TREE for w in key.split()}
                    | {n for e in TREE.values() for o in e["options"] for n in o[0]})
    # Values joined to a long option's name, and short options run together or with a value
    # attached: click's parser splits both, and so must the fast path.
    longs = [n for n in own if n[:2] == "--"] or ["--x"]
    shorts = [n[1] for n in own if len(n) == 2 and n[0] == "-"] or ["x"]
    joined = st.builds("{}={}".format, st.sampled_from(longs),
                       st.sampled_from(["", "2", "-x", "--json", "lo", "a=b"]))
    cluster = st.builds("-{}{}".format, st.sampled_from(shorts),
                        st.sampled_from([*shorts, "5", "x", "=", "-", "=2"]))
    word = st.one_of(st.sampled_from(own or common), st.sampled_from(own or common),
                     st.sampled_from(common), st.sampled_from(others), joined, cluster)
    typed = st.one_of(st.just(""), word, word.map(lambda w: w[:1]), word.map(lambda w: w[:3]),
                      word.map(str.upper),
                      st.sampled_from(["-", "--", "=", "--name=", "--c", "2", "b", "D"]))
    return st.tuples(st.just(path), st.lists(word, max_size=4), typed)

line = st.sampled_from(paths).flatmap(local)

@settings(max_examples=examples, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(line)
def check(drawn):
    path, extra, incomplete = drawn
    args = path.split() + extra
    fast = fasts(args, incomplete)
    if fast is not None:
        assert fast == clicks(args, incomplete), (args, incomplete, fast, clicks(args, incomplete))

try:
    check()
except AssertionError as exc:
    mismatches.append(str(exc))
print(json.dumps({"mismatches": mismatches, "unanswered": unanswered}))
"""

#: Lines a person types often; the fast path must answer each (args, incomplete).
COMMON = [
    ([], ""), ([], "st"), ([], "-"), (["status"], ""), (["status"], "1"), (["status"], "b"),
    (["status"], "--"), (["status", "--json"], "--"), (["wait"], ""), (["wait", "build"], ""),
    (["kill"], ""), (["cancel"], ""), (["logs"], "2"), (["logs", "--tail"], ""),
    (["submit"], "--"), (["submit"], "--c"), (["submit", "--cpu", "2"], "--"),
    (["submit", "--engine"], ""), (["submit", "--", "make"], ""), (["submit", "make"], "-"),
    (["run"], "--"), (["pause"], ""), (["pause", "queue"], "--"), (["resume"], "q"),
    (["completion"], ""), (["completion"], "z"), (["help"], "e"), (["schema"], ""),
    (["list"], "--"), (["list", "--cwd"], "--"), (["list", "--cwd"], ""),
    (["coordinator"], ""), (["systemd", "export"], ""), (["pool", "suggest", "--from"], ""),
    (["nosuch"], ""), (["daemon"], "--"), (["clean"], ""), (["rerun"], "d"),
    (["submit", "--cpu=2"], "--"), (["submit", "--name=x", "--"], ""), (["submit"], "--cpu="),
    (["logs", "--tail=5"], ""), (["list", "--state="], "r"), (["list"], "--state=r"),
    (["logs", "-fn", "5"], ""), (["logs", "-C5"], "--"), (["logs", "-fC", "2"], ""),
    (["status", "--nope"], ""), (["submit", "--cpu", "2", "-z"], "--"), (["--bad"], ""),
    (["config", "set", "-x", "--help"], "--"), (["config", "set", "--nope=1", "-hx"], "--"),
    (["config", "set", "-xh"], "--"), (["pipeline"], ""), (["submit", "--job"], "ci"),
    (["run", "--cwd"], "/"), (["list", "--under"], ""), (["rerun", "--id-file"], "x"),
]


def _records(root: Path) -> dict[str, str]:
    state = root / "state"
    for sequence, (job_id, name, job_state, submitted) in enumerate(JOBS):
        job_dir = state / "qex" / "jobs" / job_id
        job_dir.mkdir(parents=True)
        (job_dir / "status.json").write_text(json.dumps({
            "id": job_id, "name": name, "state": job_state, "submitted_at": submitted,
            "sequence": sequence}))
    (state / "qex" / "jobs" / "not-a-job").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "QEX_NO_FAST_PATH"}
    env.update(XDG_STATE_HOME=str(state), XDG_CONFIG_HOME=str(root / "config"),
               XDG_RUNTIME_DIR=str(root / "run"), QEX_PEERS_DIR=str(root / "peers"))
    return env


def test_the_tree_is_up_to_date() -> None:
    if not SAME_CLICK:
        pytest.skip("the tree follows another click release's rules")
    done = subprocess.run([sys.executable, "-m", "qex.cli.fastgen", "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_fast_answers_are_clicks(tmp_path: Path) -> None:
    """Under another click release only the candidates' kinds and values are held equal,
    in any order: releases word the help of a candidate apart, and click 8.1 keeps a help
    option's two names in a set (`--help` and `-h` come in either order)."""
    done = subprocess.run(
        [sys.executable, "-c", _COMPARE, "exact" if SAME_CLICK else "values",
         json.dumps(COMMON), "400"],
        capture_output=True, text=True, env=_records(tmp_path), timeout=600)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["mismatches"] == []
    assert found["unanswered"] == []


def test_ids_and_names_come_newest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    for key, value in _records(tmp_path).items():
        monkeypatch.setenv(key, value)
    items = fastcomplete.complete(["status"], "")
    assert items is not None
    assert [value for _kind, value, _help in items] == [
        JOBS[3][0], "build", JOBS[2][0], "deploy", JOBS[1][0], "test_run", JOBS[0][0]]
    running = fastcomplete.complete(["kill"], "")
    assert running == [("plain", JOBS[1][0], "test_run"),
                       ("plain", "test_run", "the name of 22222222")]
    assert fastcomplete.complete(["wait"], "2") == [
        ("plain", JOBS[2][0], "deploy"), ("plain", JOBS[1][0], "test_run")]


def _clicks_split() -> Any:
    try:
        from click.shell_completion import split_arg_string
    except ImportError:  # click 8.1 (Debian 12) keeps it in the parser
        from click.parser import split_arg_string  # type: ignore[attr-defined,no-redef]
    return split_arg_string


@pytest.mark.parametrize("line", [
    "", " ", "qex", "qex  status\t", "qex status --json ", "a\nb\rc", "x\x0by", "qex 'sta",
    'qex "status" ', "qex st\\ at", "qex ''", 'qex ""x', "qex \\", "qex a\\", 'qex "a\\',
    'qex "a\\"b" c', 'qex "a\\x"', "qex 'a\\'b", "qex a'b c'd", "qex --name='my job' --",
])
def test_split_is_clicks(line: str) -> None:
    assert fastcomplete.split(line) == _clicks_split()(line)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab =-'\"\\\t\n", max_size=24))
def test_split_is_clicks_for_any_line(line: str) -> None:
    assert fastcomplete.split(line) == _clicks_split()(line)


def test_the_parse_stops_where_clicks_stops() -> None:
    """click's resilient parse stops at an option it does not know, an option without its
    value and a value given to a flag, and keeps what it took before: so does this one."""
    entry = complete_tree.TREE["logs"]
    for words in (["-f", "--nope", "ID"], ["-f", "--nope=1", "ID"], ["-f", "--json=1", "ID"],
                  ["-fz", "ID"], ["-f", "-=2", "ID"], ["-f", "--tail"]):
        parsed = fastcomplete._parse(entry, words)
        assert parsed.stopped and parsed.words == [], words
        assert parsed.given == {"follow"}, words
    assert fastcomplete.complete(["status", "--nope"], "") is not None


def test_joined_values_and_runs_of_short_options_are_parsed_as_click_does() -> None:
    """The comparison with click above draws such words; these pin what the parse gives."""
    entry = complete_tree.TREE["logs"]
    parsed = fastcomplete._parse(entry, ["-fnC5", "ID"])
    assert not parsed.stopped
    assert (parsed.given, parsed.words) == ({"follow", "number", "context"}, ["ID"])
    parsed = fastcomplete._parse(entry, ["-C", "-5", "ID"])  # a value may start with `-`
    assert parsed.words == ["ID"]
    parsed = fastcomplete._parse(entry, ["--tail=", "ID"])
    assert (parsed.given, parsed.words) == ({"tail"}, ["ID"])
    parsed = fastcomplete._parse(entry, ["-fC"])
    assert parsed.stopped and parsed.given == {"follow"}


def test_paths_complete_as_paths_and_stay_text() -> None:
    """A FILE or DIR that qex reads itself offers the shell's paths, and its value is the text
    typed (no check by click: qex's own message and exit code stay)."""
    assert fastcomplete.complete(["pipeline"], "ci") == [("file", "ci", None)]
    assert fastcomplete.complete(["submit", "--job"], "") == [("file", "", None)]
    assert fastcomplete.complete(["submit", "--cwd"], "/t") == [("dir", "/t", None)]
    assert fastcomplete.complete(["list", "--cwd"], "") == [("dir", "", None)]
    from qex.cli.path_text import DIR, FILE

    assert FILE.convert("/no/such/file", None, None) == "/no/such/file"
    assert DIR.convert(b"x", None, None) == "x"
