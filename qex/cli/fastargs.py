"""A small command-line parser for the hot commands, reading `qex.cli.fast_table`.

It gives the same values as click for the argument lists it accepts (a unit test runs both
on the same lists), and gives up, returning None, on anything it does not fully understand:
an unknown option, `--help`, a clustered short option, a value that click would refuse or
that begins with a dash, a missing or extra argument, a word that an argument of fixed
choices does not take (`completion tcsh`). An option whose value may be left
out (`list --cwd [DIR]`) follows click's own rule for it. The caller then hands the whole
command to click, which prints its own usage message with its own exit code.
"""

from __future__ import annotations

from qex.cli.fast_table import TABLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _convert(kind: str, text: str) -> tuple[bool, Any]:
    """(ok, value) for one option value of this kind."""
    if kind == "value":
        return (not text.startswith("-") or text == "-"), text
    if kind.startswith("int"):
        try:
            number = int(text)
        except ValueError:
            return False, None
        if kind.startswith("int>=") and number < int(kind[5:]):
            return False, None
        return True, number
    return False, None


def _optional(kind: str, args: list[str], index: int) -> tuple[str, int]:
    """(the value, the next index) for an option whose value may be left out, by click's
    rule: the next word is the value unless it looks like an option (a dash and more);
    otherwise the option's flag value, written in its kind."""
    following = args[index] if index < len(args) else None
    if following is None or (following.startswith("-") and len(following) > 1):
        return kind.removeprefix("optional:"), index
    return following, index + 1


def parse(command: str, args: list[str]) -> dict[str, Any] | None:  # noqa: C901, PLR0912 (one pass over the words, option by option)
    """The parameters of `command` for `args` (as click's `ctx.params`), or None for click."""
    info = TABLE.get(command)
    if info is None:
        return None
    options: dict[str, tuple[str, str]] = info["options"]
    values: dict[str, Any] = dict(info["defaults"])
    multi: dict[str, list[Any]] = {}
    positional: list[str] = []
    interspersed = bool(info["interspersed"])
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            positional.extend(args[index:])
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            if not interspersed:
                positional.extend(args[index:])
                break
            continue
        name, eq, inline = arg.partition("=")
        if eq and not name.startswith("--"):
            return None
        found = options.get(name)
        if found is None:
            return None
        dest, kind = found
        if kind == "flag":
            if eq:
                return None
            values[dest] = True
            continue
        if kind == "click":
            return None
        if kind.startswith("optional:"):
            if not eq:
                inline, index = _optional(kind, args, index)
            values[dest] = inline
            continue
        if not eq:
            if index >= len(args):
                return None
            inline = args[index]
            index += 1
        base = kind.removeprefix("multi:")
        ok, value = _convert(base, inline)
        if not ok:
            return None
        if kind.startswith("multi:"):
            multi.setdefault(dest, []).append(value)
        else:
            values[dest] = value
    for dest, items in multi.items():
        values[dest] = tuple(items)
    for name, nargs, required, *choices in info["arguments"]:
        if nargs == -1:
            if required and not positional:
                return None
            values[name] = tuple(positional)
            positional = []
        elif nargs == 1:
            if not positional:
                if required:
                    return None
                continue
            if choices and positional[0] not in choices[0]:
                return None  # click names the words it takes
            values[name] = positional.pop(0)
        else:
            return None
    if positional:
        return None
    return values
