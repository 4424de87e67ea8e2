"""A Tab press answered without click: the completion scripts' call back, from a table.

The scripts that `qex completion` prints run `qex` with `_QEX_COMPLETE=SHELL_complete` and
the words typed so far at every Tab press, and click answered by importing itself and the
command's module: 35-55 ms a press, and more with many jobs on disk. This module answers
the same call from `qex.cli.complete_tree` (written by `qex.cli.fastgen` from the click
commands) by following the rules click 8.5 applies (`click.shell_completion`): which
command the words reach, whether the word under the cursor is an option's name, an option's
value or an argument, and what completes it. It steps aside (returns None) only for a value
that only click can complete. `tests/unit/test_fastcomplete.py` holds its answers to click's
over many lines.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: A candidate: its kind for the script (`plain`, `file`, `dir`), its value, its help.
Item = tuple[str, str, "str | None"]

#: The shells whose call back this module answers (click's formats for each are below).
SHELLS = ("bash", "zsh", "fish")
#: What `shlex` splits on.
_BLANKS = " \t\r\n"


def answer() -> int | None:
    """Print the candidates of this Tab press and return 0; None to let click answer."""
    shell, _, action = os.environ.get("_QEX_COMPLETE", "").partition("_")
    if shell not in SHELLS or action != "complete" or os.environ.get("QEX_NO_FAST_PATH") == "1":
        return None
    found = _args_and_incomplete(shell)
    if found is None:
        return None
    items = complete(*found)
    if items is None:
        return None
    text = "\n".join(_formatted(shell, item) for item in items) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        from qex.cli.main import reader_left

        reader_left()
    return 0


def split(line: str) -> list[str]:
    """The words of `line` as click's `split_arg_string` gives them: `shlex` in POSIX mode,
    splitting on blanks only, whose last word, cut short by an open quote or a backslash at
    the end, is kept as far as it got. `shlex` itself would import `re` at every Tab press."""
    words: list[str] = []
    word: str | None = None  # None until a word begins (an empty quoted word is a word)
    quote = ""  # the quote the cursor is inside
    index, end = 0, len(line)
    while index < end:
        char = line[index]
        index += 1
        if char == quote:
            quote = ""
        elif quote == "'" or (quote and char != "\\"):
            word = f"{word}{char}"  # inside single quotes nothing else is special
        elif char == "\\":
            if index == end:
                word = word or ""
                break
            escaped = line[index]
            index += 1
            # inside double quotes a backslash escapes only `"` and itself, else it stays
            kept = "\\" if quote and escaped not in '"\\' else ""
            word = f"{word or ''}{kept}{escaped}"
        elif char in _BLANKS:
            if word is not None:
                words.append(word)
                word = None
        elif char in "'\"":
            quote = char
            word = word or ""
        else:
            word = f"{word or ''}{char}"
    if word is not None:
        words.append(word)
    return words


def _args_and_incomplete(shell: str) -> tuple[list[str], str] | None:
    """The complete words after `qex` and the word under the cursor, as each shell's class in
    click reads them from the script's variables."""
    try:
        words = split(os.environ["COMP_WORDS"])
        if shell == "fish":
            incomplete = os.environ["COMP_CWORD"]
            if incomplete:
                typed = split(incomplete)
                if not typed:
                    return None
                incomplete = typed[0]
            args = words[1:]
            if incomplete and args and args[-1] == incomplete:
                args.pop()
            return args, incomplete
        cword = int(os.environ["COMP_CWORD"])
    except (KeyError, ValueError):
        return None
    args = words[1:cword]
    try:
        incomplete = words[cword]
    except IndexError:
        incomplete = ""
    return args, incomplete


def _formatted(shell: str, item: Item) -> str:
    kind, value, help_text = item
    if shell == "bash":
        return f"{kind},{value}"
    if shell == "zsh":
        shown = help_text or "_"
        # `_describe` splits a value from its help at the first colon that is not escaped.
        if shown != "_":
            value = value.replace(":", r"\:")
        return f"{kind}\n{value}\n{shown}"
    if help_text:  # fish reads one candidate a line, its help after a tab
        one_line = help_text.replace("\n", "\\n").replace("\t", " ")
        return f"{kind},{value}\t{one_line}"
    return f"{kind},{value}"


class _Parsed:
    """What click's resilient parse of one command's words leaves: the names of the
    parameters given on the command line, and the words left for its arguments (or for a
    group, its subcommand and what follows)."""

    __slots__ = ("given", "stopped", "words")

    def __init__(self) -> None:
        self.given: set[str] = set()
        self.words: list[str] = []
        #: click stopped parsing (an option it does not know, one that lacked its value, a
        #: value given to a flag), and no argument got a word.
        self.stopped = False


def _parse(entry: dict[str, Any], words: list[str]) -> _Parsed:
    """`entry`'s options taken out of `words` as click's parser takes them, up to where its
    resilient parse stops at an error (the words after it are dropped, as click drops them)."""
    by_name = {name: option for option in entry["options"] for name in option[0]}
    ignore_unknown = entry["ignore_unknown"]
    parsed = _Parsed()
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word == "--":
            break
        if word[:1] == "-" and len(word) > 1:
            if word in by_name:
                taken = _take(by_name[word], rest, parsed)
            elif word[:2] == "--":
                taken = _take_long(by_name, word, rest, parsed, ignore_unknown)
            else:
                taken = _take_short(by_name, word, rest, parsed, ignore_unknown)
            if not taken:
                parsed.stopped = True
                return parsed
        elif entry["interspersed"]:
            parsed.words.append(word)
        else:
            rest.insert(0, word)
            break
    parsed.words.extend(rest)
    return parsed


def _take(option: tuple[Any, ...], rest: list[str], parsed: _Parsed) -> bool:
    """One option given: its value taken from the front of `rest` where click's parser takes
    one. False when it lacked its value (click stops parsing there)."""
    _names, name, takes_value, _multiple, _hidden, may_omit, _help, _value = option
    if takes_value:
        if not rest:
            if not may_omit:
                return False
        elif not (may_omit and rest[0][:1] == "-" and len(rest[0]) > 1):
            rest.pop(0)
    parsed.given.add(name)
    return True


def _take_long(by_name: dict[str, tuple[Any, ...]], word: str, rest: list[str],
               parsed: _Parsed, ignore_unknown: bool) -> bool:
    """`--name=value`: click's parser puts the value back in front of the words left and
    reads the option as usual. False (click stops) for a value given to a flag, and for an
    unknown name unless the command takes that as an argument."""
    name, equals, value = word.partition("=")
    option = by_name.get(name)
    if option is None and ignore_unknown:
        parsed.words.append(word)
        return True
    if not equals or option is None or not option[2]:
        return False
    rest.insert(0, value)
    return _take(option, rest, parsed)


def _take_short(by_name: dict[str, tuple[Any, ...]], word: str, rest: list[str],
                parsed: _Parsed, ignore_unknown: bool) -> bool:
    """`-qf`, `-n5`: click's parser reads one letter after the other as a short option, and
    the first that takes a value gets the letters after it (if any) as its value. False
    (click stops, the letters before kept) at a letter that is no option, unless the command
    takes those letters, joined after a `-`, as an argument once the word is read."""
    unknown = ""
    taken = True
    for index in range(1, len(word)):
        option = by_name.get(f"-{word[index]}")
        if option is None:
            if not ignore_unknown:
                return False
            unknown += word[index]
        elif option[2]:
            if index + 1 < len(word):
                rest.insert(0, word[index + 1:])
            taken = _take(option, rest, parsed)
            break
        else:
            parsed.given.add(option[1])
    if unknown and taken:
        parsed.words.append(f"-{unknown}")
    return taken


def _arguments_given(entry: dict[str, Any], words: list[str]) -> set[str]:
    """The arguments that got words (click's `_unpack_args`: the ones before a `nargs=-1`
    argument from the front, the ones after it from the back)."""
    arguments = entry["arguments"]
    given: set[str] = set()
    front = 0
    back = len(words)
    spread = next((i for i, argument in enumerate(arguments) if argument[1] < 0), None)
    for index, (name, nargs, _value) in enumerate(arguments):
        if spread is not None and index >= spread:
            break
        if front + nargs <= back:
            given.add(name)
        front += nargs
    if spread is not None:
        for name, nargs, _value in reversed(arguments[spread + 1:]):
            if back - nargs >= front:
                given.add(name)
            back -= nargs
    return given


def complete(args: list[str], incomplete: str) -> list[Item] | None:
    """The candidates for `incomplete` after `args` (the words after `qex`), in click's
    order; None when only click can say."""
    from qex.cli.complete_tree import TREE

    key = ""
    entry = TREE[key]
    rest = args
    while True:
        parsed = _parse(entry, rest)
        if not entry["group"] or parsed.stopped or not parsed.words:
            break
        name = parsed.words[0]
        if name not in entry["hidden"] and all(name != known for known, _ in entry["commands"]):
            break  # no such command: click completes at the group
        key = f"{key} {name}".strip()
        entry = TREE[key]
        rest = parsed.words[1:]
    arguments_given = (set() if parsed.stopped or entry["group"]
                       else _arguments_given(entry, parsed.words))
    return _resolve(entry, list(args), incomplete, parsed.given | arguments_given)


def _resolve(entry: dict[str, Any], args: list[str], incomplete: str,
             given: set[str]) -> list[Item] | None:
    """click's `_resolve_incomplete`, then the `shell_complete` of what it finds."""
    if incomplete == "=":
        incomplete = ""
    elif "=" in incomplete and incomplete[:1] == "-":
        # `--name=val`: the value is completed as if `--name` were the word before it
        name, _, incomplete = incomplete.partition("=")
        args = [*args, name]
    if "--" not in args and incomplete[:1] == "-":
        return _command_items(entry, incomplete, given)
    last = args[-1] if args else ""
    if last[:1] == "-":
        for names, _name, takes_value, *_flags, value in entry["options"]:
            if takes_value and last in names:
                return _values(value, incomplete)
    for name, nargs, value in entry["arguments"]:
        if nargs < 0 or name not in given:
            return _values(value, incomplete)
    return _command_items(entry, incomplete, given)


def _command_items(entry: dict[str, Any], incomplete: str, given: set[str]) -> list[Item]:
    """A command's own candidates: its subcommands (a group), and its options when the word
    starts with something else than a letter or digit (not those given already, unless
    they may repeat)."""
    items: list[Item] = [("plain", name, text) for name, text in entry["commands"]
                         if name.startswith(incomplete)]
    if incomplete and not incomplete[0].isalnum():
        for names, name, _takes, multiple, hidden, _omit, text, _value in entry["options"]:
            if hidden or (not multiple and name in given):
                continue
            items.extend(("plain", option, text) for option in names
                         if option.startswith(incomplete))
    return items


def _values(value: Any, incomplete: str) -> list[Item] | None:
    """What completes a value of the kind `qex.cli.fastgen._value_completion` wrote."""
    if value == "none":
        return []
    if value in ("file", "dir"):
        return [(value, incomplete, None)]
    if value in ("ids", "active", "queued"):
        from qex.cli.complete_jobs import offered_for

        return [("plain", word, text) for word, text in offered_for(value, incomplete)]
    if isinstance(value, tuple) and value[0] == "choice":
        _kind, case_sensitive, words = value
        if case_sensitive:
            return [("plain", word, None) for word in words if word.startswith(incomplete)]
        lower = incomplete.lower()
        return [("plain", word, None) for word in words if word.lower().startswith(lower)]
    if isinstance(value, tuple) and value[0] == "words":
        lower = incomplete.lower()
        return [("plain", word, None) for word in value[1] if word.startswith(lower)]
    return None
