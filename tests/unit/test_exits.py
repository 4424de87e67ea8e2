"""The one exit-code policy: what the client raises, and the code each command gives for it."""

from __future__ import annotations

import pytest

from qex.cli import exits
from qex.cli.exits import Failure, code_for
from qex.client.errors import ClientError, Lost, Refused, TimedOut, Unreachable
from qex.core import protocol
from qex.core.exit_band import Exit as BandExit
from qex.core.states import Exit

BAND = sorted(exits.BAND_COMMANDS)
OTHERS = ["list", "kill", "cancel", "clean", "info", "pause", "events", None]


@pytest.mark.parametrize("command", BAND)
def test_band_commands(command: str) -> None:
    assert code_for(TimedOut("x"), command) == Exit.WAIT_TIMEOUT
    assert code_for(Unreachable("x"), command) == Exit.QEX_FAILED
    assert code_for(Lost("x"), command) == Exit.QEX_FAILED
    assert code_for(Refused(protocol.NO_SUCH_JOB, "x"), command) == Exit.NO_SUCH_JOB
    assert code_for(Refused(protocol.WRONG_STATE, "x"), command) == Exit.QEX_FAILED
    assert code_for(Failure("x"), command) == Exit.QEX_FAILED
    assert code_for(Failure("x", not_found=True), command) == Exit.NO_SUCH_JOB
    assert exits.usage(command) == Exit.QEX_FAILED
    assert exits.interrupted(command) == Exit.WAIT_INTERRUPTED


@pytest.mark.parametrize("command", OTHERS)
def test_other_commands(command: str | None) -> None:
    assert code_for(TimedOut("x"), command) == Exit.WAIT_TIMEOUT
    assert code_for(Unreachable("x"), command) == Exit.FAILURE
    assert code_for(Lost("x"), command) == Exit.FAILURE
    assert code_for(Refused(protocol.NO_SUCH_JOB, "x"), command) == Exit.NO_SUCH_JOB
    assert code_for(Refused(protocol.INTERNAL, "x"), command) == Exit.FAILURE
    assert code_for(Failure("x"), command) == Exit.FAILURE
    assert exits.usage(command) == Exit.USAGE
    assert exits.interrupted(command) == Exit.FAILURE


def test_client_errors_carry_no_exit_code() -> None:
    """The client says what happened; only qex.cli.exits picks a number."""
    for error in (TimedOut("x"), Unreachable("x"), Lost("x"), Refused("internal", "x")):
        assert isinstance(error, ClientError)
        assert not hasattr(error, "code")


def test_report_prints_one_sentence_and_exits(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        exits.report(Refused(protocol.NO_SUCH_JOB, "no job\x1b[31m here"), "wait")
    assert done.value.code == Exit.NO_SUCH_JOB
    err = capsys.readouterr().err
    assert err.startswith("qex: no job") and "\x1b" not in err


def test_main_maps_a_client_error_with_the_command_word(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.cli import fast, main

    def unreachable(_args: list[str]) -> int | None:
        raise Unreachable("nobody home")

    monkeypatch.setattr(fast, "answer", unreachable)
    for word, code in (("status", Exit.QEX_FAILED), ("list", Exit.FAILURE)):
        with pytest.raises(SystemExit) as done:
            main.main([word, "x", "--json"])
        assert done.value.code == code
    assert "qex: nobody home" in capsys.readouterr().err


def test_no_raw_band_literals_in_the_code() -> None:
    """121, 122, 124 and 127 are numbers in one place only: qex.core.exit_band.Exit."""
    import ast
    from pathlib import Path

    import qex

    root = Path(qex.__file__).parent
    # The forked child's own code when exec fails (as a shell gives); the job's, not qex's.
    allowed = {("supervisor/spawn.py", "os._exit(127)"),
               # A shell's "command not found" from Slurm's own programs, not qex's band.
               ("engine/slurm/commands.py", "if code == 127 and not out:")}
    offenders = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name == "core/exit_band.py":
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.Constant) and type(node.value) is int
                    and node.value in (121, 122, 124, 127)):
                continue
            if ast.get_source_segment(text, node) != str(node.value):
                continue  # 0o177 and 0x7F are other numbers that happen to be equal
            if (name, lines[node.lineno - 1].strip()) not in allowed:
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == []


def test_plain_codes_equal_the_states_codes() -> None:
    """exits hands on the band's codes under its callers' names, and `states` re-exports the
    same `Exit`."""
    assert Exit is BandExit
    for name in ("OK", "FAILURE", "USAGE", "JOB_HIGH", "SIGNAL", "QEX_FAILED",
                 "WAIT_INTERRUPTED", "WAIT_TIMEOUT", "NO_SUCH_JOB"):
        assert getattr(exits, name) == getattr(Exit, name), name
    assert exits.REFUSED_NO_SUCH_JOB == protocol.NO_SUCH_JOB
