"""The click application on the oldest click qex supports (8.1, Debian 12's), where
`click.exceptions.NoArgsIsHelpError` does not exist: every way out of `run` must still work."""

from __future__ import annotations

import pytest

from qex.cli import app


def test_version_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        app.run(["--version"], "--version")
    assert ended.value.code == 0
    assert capsys.readouterr().out.startswith("qex ")


def test_a_group_without_a_subcommand_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        app.run(["systemd"], "systemd")
    assert ended.value.code in (0, 2)  # click 8.1 exits 0 after the help, 8.2 raises
    assert "export" in capsys.readouterr().out


def test_the_stand_in_is_never_a_real_click_error() -> None:
    import click

    real = getattr(click.exceptions, "NoArgsIsHelpError", None)
    assert app.NO_ARGS_IS_HELP is (real or app._NeverRaised)
