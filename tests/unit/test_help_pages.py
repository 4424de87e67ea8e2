"""The help pages printed without click (`qex.cli.help_fast`) against click's own.

`qex.cli.help_pages` is written by `qex.cli.fastgen` from the click commands. These tests
fail when it is out of date, when a page printed from it differs from the one click prints
for the same words, and when a request that click must answer (a narrow terminal, options
before the flag, a hidden command) is answered from it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.cli import fastgen, help_fast, help_pages

#: Whether the click here is the release that laid the pages out. Another release words a
#: few usage lines apart (click 8.1 writes `COMMAND` for a group that runs without one).
SAME_CLICK = fastgen.click_release() == help_pages.CLICK


def _body(text: str) -> str:
    """Printed pages without their usage line where the click releases differ."""
    if SAME_CLICK:
        return text
    return "\n".join(line for line in text.split("\n") if not line.startswith("Usage: "))


def _fresh(code: str, *argv: str, columns: str = "80") -> Any:
    """What `code` prints as JSON, run in a new interpreter. click keeps each command's help
    option from the first context that asks for it, and other tests in this process make
    contexts without `-h`; a new interpreter sees the commands as the program does."""
    env = {k: v for k, v in os.environ.items() if k != "QEX_NO_FAST_PATH"}
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env={**env, "COLUMNS": columns}, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


#: Prints, for each argument list in argv[1], what `main` prints and exits with, with the
#: fast path and then without it.
_BOTH_WAYS = """
import contextlib, io, json, os, sys
from qex.cli.main import main

def printed(args):
    out, code = io.StringIO(), None
    with contextlib.redirect_stdout(out):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
    return [out.getvalue(), code]

found = []
for args in json.loads(sys.argv[1]):
    os.environ.pop("QEX_NO_FAST_PATH", None)
    fast = printed(args)
    os.environ["QEX_NO_FAST_PATH"] = "1"
    found.append([args, *fast, *printed(args)])
print(json.dumps(found))
"""

#: Prints the pages as the generator lays them out now.
_GENERATED = """
import json
from qex.cli import fastgen
print(json.dumps({key: page for key, (page, _short) in fastgen.help_pages().items()}))
"""


def test_the_generated_pages_are_up_to_date() -> None:
    if SAME_CLICK:
        done = subprocess.run([sys.executable, "-m", "qex.cli.fastgen", "--check"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    pages = _fresh(_GENERATED)
    assert set(pages) == set(help_pages.PAGES)
    for key, page in pages.items():
        assert _body(page) == _body(help_pages.PAGES[key]), key


#: Prints the completion scripts as click writes them now.
_SCRIPTS = """
import json
from qex.cli.commands.completion import SHELLS, script
print(json.dumps({shell: script(shell) for shell in SHELLS}))
"""


def test_the_completion_scripts_are_clicks() -> None:
    """The copies the fast `qex completion` prints. Under another click release only the
    call back is checked: the scripts may be worded apart, the protocol is the same."""
    from qex.cli.completion_scripts import SCRIPTS

    scripts = _fresh(_SCRIPTS)
    assert set(scripts) == set(SCRIPTS) == {"bash", "zsh", "fish"}
    for shell, script in scripts.items():
        if SAME_CLICK:
            assert SCRIPTS[shell] == script, shell
        for text in (script, SCRIPTS[shell]):
            assert help_fast.COMPLETE_VAR in text and f"{shell}_complete" in text, shell


def test_every_visible_command_has_a_page() -> None:
    from qex.cli.main import COMMANDS

    visible = {name for name, (_, _, hidden) in COMMANDS.items() if not hidden}
    assert visible <= set(help_pages.PAGES)
    assert "" in help_pages.PAGES
    assert "pause queue" in help_pages.PAGES and "config show" in help_pages.PAGES


@pytest.mark.parametrize("columns", ["80", "132"])
def test_each_page_is_the_one_click_prints(columns: str) -> None:
    asked = [[*key.split(), flag] for key in help_pages.PAGES for flag in ("--help", "-h")]
    found = _fresh(_BOTH_WAYS, json.dumps(asked), columns=columns)
    assert len(found) == len(asked)
    for args, fast_out, fast_code, click_out, click_code in found:
        assert fast_out == help_pages.PAGES[" ".join(args[:-1])] + "\n"
        assert (fast_code, _body(fast_out)) == (click_code, _body(click_out)) == (0, _body(
            fast_out)), args


def test_qex_alone_prints_the_banner_and_the_page() -> None:
    [(_args, fast_out, fast_code, click_out, click_code)] = _fresh(_BOTH_WAYS, "[[]]")
    assert fast_out == f"{help_fast.BANNER}\n{help_pages.PAGES['']}\n"
    assert (fast_code, _body(fast_out)) == (click_code, _body(click_out)) == (0, _body(fast_out))


@pytest.mark.parametrize("args", [
    ["-h", "submit"],                    # the flag first: the group's page, from click
    ["submit", "--cpu", "2", "--help"],  # options before the flag: click checks them first
    ["submit", "--", "--help"],          # after `--` it is the job's word
    ["daemon", "--help"],                # hidden commands have no page here
    ["nosuch", "--help"],                # click names the mistake
    ["submit", "extra", "--help"],
    ["submit"],
])
def test_requests_that_click_must_answer(args: list[str]) -> None:
    assert help_fast.answer_help(args) is None


def test_a_narrow_terminal_gets_clicks_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(help_pages.COLUMNS - 1))
    assert help_fast.answer_help(["submit", "--help"]) is None
    monkeypatch.setenv("COLUMNS", str(help_pages.COLUMNS))
    assert help_fast.answer_help(["submit", "--help"]) == 0


def test_the_switch_turns_the_pages_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QEX_NO_FAST_PATH", "1")
    assert help_fast.answer_help(["--help"]) is None


def test_a_tab_press_gets_candidates_not_a_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The completion scripts run `qex` with no arguments and `_QEX_COMPLETE` set."""
    monkeypatch.setenv(help_fast.COMPLETE_VAR, "bash_complete")
    assert help_fast.answer_help([]) is None
    assert help_fast.answer_help(["--help"]) is None


def test_a_command_that_gives_h_another_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(help_pages, "NO_SHORT_FLAG", frozenset({"logs"}))
    assert help_fast.answer_help(["logs", "-h"]) is None
    assert help_fast.answer_help(["logs", "--help"]) == 0


@given(st.one_of(st.none(), st.integers(-3, 300).map(str), st.text(max_size=4)))
def test_the_width_is_found_as_shutil_finds_it(columns: str | None) -> None:
    saved = os.environ.get("COLUMNS")
    try:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        elif "\x00" in columns:
            return  # not a value an environment can hold
        else:
            os.environ["COLUMNS"] = columns
        assert help_fast.terminal_columns() == shutil.get_terminal_size().columns
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def test_a_page_costs_no_click_import() -> None:
    code = ("import sys\nfrom qex.cli.main import main\ntry:\n    main(['submit', '--help'])\n"
            "except SystemExit:\n    pass\nprint('click' in sys.modules, file=sys.stderr)\n")
    env = {k: v for k, v in os.environ.items() if k != "QEX_NO_FAST_PATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == "False"
    assert out.stdout.startswith("Usage: qex submit")

