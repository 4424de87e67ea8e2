"""Answers for the two requests that scripts and agents repeat most, without click.

`qex status <id> --json` and `qex list --json` are polled in loops; Python's start-up plus
click's import is most of their cost on a small machine. These exact forms run the same code
as the click commands (`qex.cli.status_core`, `qex.cli.list_core`); any other form, including
every error path that needs click's usage messages, goes to the click application.
"""

from __future__ import annotations


def answer(args: list[str]) -> int | None:
    """The exit code when a fast form handled `args`; None to use the click application."""
    if len(args) == 3 and args[0] == "status" and "--json" in args[1:]:
        word = args[2] if args[1] == "--json" else args[1]
        if word.startswith("-") or args.count("--json") != 1:
            return None
        return _status_json(word)
    if args == ["list", "--json"]:
        return _list_json()
    return None


def _status_json(word: str) -> int:
    from qex.cli.common import get_paths
    from qex.cli.status_core import show_status
    from qex.core.logsel import Selection
    from qex.core.states import Exit

    paths = get_paths(Exit.QEX_FAILED)
    try:
        show_status(paths, word, as_json=True, show_env=False, no_logs=False, wait=False,
                    follow=False, quiet=False, timeout=None, sel=Selection(),
                    only_stdout=False, only_stderr=False)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 0


def _list_json() -> int:
    from qex.cli.list_core import show_list

    show_list(as_json=True)
    return 0
