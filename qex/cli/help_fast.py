"""`--help`, and `qex` alone, without click: the pages come from `qex.cli.help_pages`.

An agent starts a session by reading `qex` and `qex COMMAND --help`, and importing click to
lay those pages out took three times the interpreter's own start-up. The pages are laid out
by click when `qex.cli.fastgen` runs (a unit test holds them to click's live output), so
this module only picks one and prints it. Anything else goes to click as before: a terminal
narrower than the pages, a help flag that is not the last word, options before it, a hidden
command, a Tab press of the completion scripts, `QEX_NO_FAST_PATH=1`.
"""

from __future__ import annotations

import os
import sys

#: Printed above the page of `qex` with no arguments (by this module and by the click group).
BANNER = (
    " ==> AGENTS: read `qex help agents` first. It is short and complete: how to start a job,\n"
    "     wait for it and read its output. Never write a monitor loop; `qex wait` is that loop.\n"
)

HELP_FLAGS = ("--help", "-h")
#: Set by the completion scripts at each Tab press, which run `qex` with no arguments: click
#: answers those with candidates, not with a page.
COMPLETE_VAR = "_QEX_COMPLETE"


def answer_help(args: list[str]) -> int | None:
    """Print the page that `args` asks for and return 0; None to let click answer."""
    if os.environ.get("QEX_NO_FAST_PATH") == "1" or (args and args[-1] not in HELP_FLAGS):
        return None
    if COMPLETE_VAR in os.environ:
        return None
    words = args[:-1]
    if any(word.startswith("-") for word in words):
        return None  # `qex -h submit`, `qex submit --cpu 2 --help`, `qex submit -- --help`
    from qex.cli import help_pages

    key = " ".join(words)
    page = help_pages.PAGES.get(key)
    if page is None or terminal_columns() < help_pages.COLUMNS:
        return None
    if args and args[-1] == "-h" and key in help_pages.NO_SHORT_FLAG:
        return None
    # click echoes the banner (which ends in a newline) and then the page, each with a newline.
    text = f"{page}\n" if args else f"{BANNER}\n{page}\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        from qex.cli.main import reader_left

        reader_left()  # `qex --help | head -3`
    return 0


def terminal_columns() -> int:
    """The width click would lay a page out for, found the way `shutil.get_terminal_size`
    finds it (`COLUMNS`, then the terminal on stdout, then 80), without importing `shutil`."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
        except (ValueError, OSError):  # not a terminal, or stdout closed
            columns = 0
        columns = columns or 80
    return columns
