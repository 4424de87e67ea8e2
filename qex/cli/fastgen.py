"""Write `qex.cli.fast_table` from the click commands, so the fast parser reads one source.

The click commands in `qex.cli.commands` define the options of every command (their help
text, their names, their types). The fast path (`qex.cli.fast`) must not import click, so it
reads a plain table generated from those definitions:

    .venv/bin/python -m qex.cli.fastgen          # rewrite qex/cli/fast_table.py
    .venv/bin/python -m qex.cli.fastgen --check  # exit 1 when the table is out of date

`tests/unit/test_fast_path.py` fails when the table and the click commands disagree, so the
two cannot drift apart. Only shapes the fast parser understands are written; any other
option kind is written as `"click"`, and giving it sends the command to click.

The same run writes `qex.cli.help_pages`: every visible command's `--help` page as click lays
it out on a terminal of 80 columns or more (and into a pipe), which `qex.cli.help_fast`
prints without importing click; `tests/unit/test_help_pages.py` holds those to click too.
And `qex.cli.completion_scripts`, the shells' completion scripts for `qex completion`, and
`qex.cli.complete_tree`, what a Tab press needs to know of every command (its subcommands,
options, arguments and what completes their values), which `qex.cli.fastcomplete` answers
from; `tests/unit/test_fastcomplete.py` holds its answers to click's.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

#: The commands that have a fast path (the ones users and agents repeat, `clean`, which an
#: agent runs after its work, `info`, which an agent asks to see whether the machine has
#: room, `pipeline`, which a CI harness runs per change, `rerun`, which an agent runs after a
#: failure, `events`, which an agent runs per change it waits for, the pauses that a harness
#: takes and gives back around its work, `version`, which tools ask first, `help`, whose
#: pages an agent reads at the start of a session, `completion`, which a shell's start-up
#: file runs, and `daemon`, so that a coordinator never imports click). A subcommand is
#: written with its group's word first (`pause queue`); its group's own entry (`pause`)
#: covers the group's options with no subcommand.
HOT = ("submit", "run", "wait", "status", "list", "logs", "kill", "cancel", "clean", "info",
       "daemon", "pipeline", "rerun", "events", "pause", "pause queue", "pause lock", "resume",
       "resume queue", "resume lock", "version", "help", "completion", "watchers",
       "config show", "config path", "du", "gc", "coordinator stop", "coordinator restart",
       "schema")

TABLE_PATH = Path(__file__).with_name("fast_table.py")
PAGES_PATH = Path(__file__).with_name("help_pages.py")
SCRIPTS_PATH = Path(__file__).with_name("completion_scripts.py")
TREE_PATH = Path(__file__).with_name("complete_tree.py")
#: click lays a page out at `min(columns, 80) - 2`: every terminal this wide or wider, and a
#: pipe (80 columns by default), gets the same page.
PAGE_COLUMNS = 80


def _kind(param: Any) -> str:
    import click

    if param.nargs != 1:
        return "click"
    if getattr(param, "_flag_needs_value", False):
        # `--cwd [DIR]`: a text value that may be left out, which gives the flag value.
        plain = isinstance(param.type, click.types.StringParamType) and not param.multiple
        if plain and isinstance(param.flag_value, str) and not param.is_flag:
            return f"optional:{param.flag_value}"
        return "click"
    if param.is_flag:
        return "flag" if not param.secondary_opts else "click"
    if param.count:
        return "click"
    kind = "value"
    if isinstance(param.type, click.IntRange):
        low = param.type.min
        if param.type.max is not None or param.type.min_open or low is None:
            return "click"
        kind = f"int>={low}"
    elif isinstance(param.type, click.types.IntParamType):
        kind = "int"
    elif not isinstance(param.type, click.types.StringParamType):
        return "click"
    return f"multi:{kind}" if param.multiple else kind


def click_command(name: str) -> Any:
    """The click command of a table entry: `status`, or a group's subcommand (`pause queue`)."""
    from qex.cli.main import COMMANDS

    group, _, sub = name.partition(" ")
    command = importlib.import_module(COMMANDS[group][0]).command
    return command.commands[sub] if sub else command


def root_context() -> Any:
    """The context of `qex` itself, with the group's settings (`-h` as well as `--help`)."""
    import click

    from qex.cli.app import cli

    return click.Context(cli, info_name="qex", **cli.context_settings)


def describe(name: str) -> dict[str, Any]:
    """The fast parser's view of one click command."""
    import click

    command = click_command(name)
    # Under the group's context, as when qex runs: click keeps a command's help option from
    # the first context that asks for it, and the pages written below must show `-h` too.
    defaults = command.make_context(name.rpartition(" ")[2], [], parent=root_context(),
                                    resilient_parsing=True).params
    options: dict[str, tuple[str, str]] = {}
    arguments: list[tuple[Any, ...]] = []
    for param in command.params:
        if isinstance(param, click.Argument):
            argument: tuple[Any, ...] = (str(param.name), param.nargs, bool(param.required))
            if isinstance(param.type, click.Choice):  # the words it takes, as a fourth item
                argument = (*argument, tuple(str(choice) for choice in param.type.choices))
            arguments.append(argument)
            continue
        kind = _kind(param)
        for opt in param.opts:
            options[opt] = (str(param.name), kind)
    return {
        "interspersed": bool(command.allow_interspersed_args)
        and command.context_settings.get("allow_interspersed_args", True),
        "options": options,
        "arguments": arguments,
        "defaults": {key: defaults[key] for key in sorted(defaults)},
    }


def _typed_module_head(*doc: str) -> list[str]:
    """The first lines of a generated module of typed dicts: its docstring (`doc`, a line
    each), then `Any` imported for the type checker only (the fast path never pays for
    `typing`)."""
    return [
        f'"""{doc[0]}', *doc[1:], '"""', "",
        "from __future__ import annotations", "",
        "TYPE_CHECKING = False",
        "if TYPE_CHECKING:",
        "    from typing import Any",
        "",
    ]


def render() -> str:
    lines = [
        *_typed_module_head(
            "The options of the hot commands, for the fast parser (no click at run time).",
            "",
            "GENERATED by `python -m qex.cli.fastgen` from the click commands: do not edit.",
        ),
        "TABLE: dict[str, dict[str, Any]] = {",
    ]
    for name in HOT:
        info = describe(name)
        lines.append(f"    {name!r}: {{")
        lines.append(f"        'interspersed': {info['interspersed']!r},")
        lines.append("        'options': {")
        lines.extend(f"            {opt!r}: {value!r}," for opt, value in info["options"].items())
        lines.append("        },")
        lines.append(f"        'arguments': {info['arguments']!r},")
        lines.append("        'defaults': {")
        lines.extend(f"            {k!r}: {v!r}," for k, v in info["defaults"].items())
        lines.append("        },")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def help_pages() -> dict[str, tuple[str, bool]]:
    """Each visible command's help page (key: its words, `""` for `qex` itself, `"pause
    queue"` for a subcommand) with whether `-h` asks for it there (a command could give `-h`
    another meaning), laid out for `PAGE_COLUMNS` columns."""
    import os

    import click

    pages: dict[str, tuple[str, bool]] = {}

    def walk(command: click.Command, ctx: click.Context, words: tuple[str, ...]) -> None:
        short = "-h" in command.get_help_option_names(ctx)
        pages[" ".join(words)] = (ctx.get_help(), short)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, click.Context(sub, info_name=name, parent=ctx), (*words, name))

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(PAGE_COLUMNS)  # what `shutil.get_terminal_size` reads first
    try:
        root = root_context()
        walk(root.command, root, ())
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return pages


def click_release() -> str:
    """click's major.minor, which the page module records (releases word a few usage lines
    apart: `[COMMAND]` or `COMMAND` for a group that runs without one)."""
    from importlib.metadata import version

    return ".".join(version("click").split(".")[:2])


def render_pages() -> str:
    pages = help_pages()
    lines = [
        '"""The `--help` page of every visible command, for `qex.cli.help_fast` (no click).',
        "",
        "GENERATED by `python -m qex.cli.fastgen` from the click commands: do not edit.",
        '"""',
        "",
        "#: The click release that laid these pages out.",
        f"CLICK = {click_release()!r}",
        "#: The narrowest terminal that gets these pages; a narrower one gets click's own.",
        f"COLUMNS = {PAGE_COLUMNS}",
        "#: The pages where `-h` means something else than help (only `--help` asks for them).",
        "NO_SHORT_FLAG: frozenset[str] = frozenset("
        f"{sorted(k for k, (_, short) in pages.items() if not short)!r})",
        "",
        "PAGES: dict[str, str] = {",
        *_text_entries({key: page for key, (page, _short) in pages.items()}),
    ]
    return "\n".join(lines) + "\n"


def _text_entries(texts: dict[str, str]) -> list[str]:
    """The entries of a generated dict of long texts, one source line per line of text, and
    the dict's closing brace."""
    lines: list[str] = []
    for key, text in texts.items():
        lines.append(f"    {key!r}: (")
        lines.extend(f"        {line!r}" for line in text.splitlines(keepends=True))
        lines.append("    ),")
    lines.append("}")
    return lines


def render_scripts() -> str:
    from qex.cli.commands.completion import SHELLS, script

    lines = [
        '"""The completion script of each shell, for the fast `qex completion` (no click).',
        "",
        "GENERATED by `python -m qex.cli.fastgen` from `qex.cli.commands.completion.script`:",
        "do not edit.",
        '"""',
        "",
        "SCRIPTS: dict[str, str] = {",
        *_text_entries({shell: script(shell) for shell in SHELLS}),
    ]
    return "\n".join(lines) + "\n"


def _value_completion(param: Any, ctx: Any) -> Any:
    """What completes a value of `param` at a Tab press, in words `qex.cli.fastcomplete`
    knows: `"none"`, `"file"`, `"dir"`, `("choice", case_sensitive, words)`, `("words",
    words)` (a list of its own, matched from the start in lower case), a job kind of
    `qex.cli.complete_jobs` (found by asking the function, with the reader replaced), or
    `"click"` (only click can say; the fast path steps aside)."""
    import click

    from qex.cli import complete_jobs
    from qex.cli.path_text import PathText

    custom = getattr(param, "_custom_shell_complete", None)
    if custom is not None:
        asked: list[str] = []
        real = complete_jobs.offered_for

        def probe(kind: str, incomplete: str) -> list[tuple[str, str]]:
            asked.append(kind)
            return []

        complete_jobs.offered_for = probe
        try:
            words = custom(ctx, param, "")
        finally:
            complete_jobs.offered_for = real
        if len(asked) == 1 and words == []:
            return asked[0]
        if asked or not all(isinstance(word, str) for word in words):
            return "click"
        # Held to the rule the fast path applies: the words that start with the incomplete
        # value in lower case, in the list's order.
        for word in words:
            for typed in (word[:1], word[:1].upper(), word[:2].upper(), word):
                wanted = [w for w in words if w.startswith(typed.lower())]
                if custom(ctx, param, typed) != wanted:
                    return "click"
        return ("words", tuple(words))
    kind = param.type
    if isinstance(kind, click.Choice):
        normalize = getattr(kind, "normalize_choice", None)
        words = [normalize(choice, ctx) if normalize else str(choice)
                 for choice in kind.choices]
        return ("choice", bool(kind.case_sensitive), tuple(words))
    if isinstance(kind, click.Path):
        return "dir" if kind.dir_okay and not kind.file_okay else "file"
    if isinstance(kind, click.File):
        return "file"
    if isinstance(kind, PathText):
        return kind.completes
    if type(kind).shell_complete is click.ParamType.shell_complete:
        return "none"
    return "click"


def completion_tree() -> dict[str, dict[str, Any]]:
    """Every command's entry for `qex.cli.complete_tree`, by its words (`""` for `qex`,
    `"pause queue"`), hidden commands included: click resolves them at a Tab press too."""
    import click

    from qex.cli.main import COMMANDS

    tree: dict[str, dict[str, Any]] = {}

    def walk(command: click.Command, ctx: click.Context, words: tuple[str, ...]) -> None:
        options: list[tuple[Any, ...]] = []
        arguments: list[tuple[Any, ...]] = []
        for param in command.get_params(ctx):
            if isinstance(param, click.Argument):
                arguments.append((str(param.name), param.nargs, _value_completion(param, ctx)))
                continue
            assert isinstance(param, click.Option)
            takes_value = not (param.is_flag or param.count)
            plain = (not param.secondary_opts and param.nargs == 1
                     and all(opt.startswith("-") for opt in param.opts))
            options.append((
                tuple(param.opts), str(param.name), takes_value, bool(param.multiple),
                bool(param.hidden), bool(getattr(param, "_flag_needs_value", False)),
                param.help, _value_completion(param, ctx) if plain else "click",
            ))
        visible: list[tuple[str, str]] = []
        hidden: list[str] = []
        if isinstance(command, click.Group):
            names = command.list_commands(ctx)
            if not words:
                names = names + [n for n, (_, _, secret) in COMMANDS.items() if secret]
            for name in names:
                sub = command.get_command(ctx, name)
                if sub is None:
                    continue
                if sub.hidden:
                    hidden.append(name)
                else:
                    visible.append((name, sub.get_short_help_str()))
                walk(sub, click.Context(sub, info_name=name, parent=ctx, **sub.context_settings),
                     (*words, name))
            if command.chain:
                raise SystemExit("a chained group: qex.cli.fastcomplete does not know them")
        tree[" ".join(words)] = {
            "group": isinstance(command, click.Group),
            "interspersed": bool(ctx.allow_interspersed_args),
            "ignore_unknown": bool(ctx.ignore_unknown_options),
            "commands": visible,
            "hidden": hidden,
            "options": options,
            "arguments": arguments,
        }

    root = root_context()
    walk(root.command, root, ())
    return tree


def render_tree() -> str:
    lines = [
        *_typed_module_head(
            "What a Tab press needs to know of each command, for `qex.cli.fastcomplete`.",
            "",
            "GENERATED by `python -m qex.cli.fastgen` from the click commands: do not edit.",
            "",
            "An option: (its names, its parameter name, whether it takes a value, multiple,",
            "hidden, whether its value may be left out, its help, what completes its value).",
            "An argument: (its name, nargs, what completes it). See",
            "`qex.cli.fastgen._value_completion`. `ignore_unknown`: the command takes an option",
            "it does not know as an argument (click's `ignore_unknown_options`).",
        ),
        "#: The click release whose completion rules the fast path follows.",
        f"CLICK = {click_release()!r}",
        "",
        "TREE: dict[str, dict[str, Any]] = {",
    ]
    for key, entry in completion_tree().items():
        lines.append(f"    {key!r}: {{")
        for field, value in entry.items():
            if isinstance(value, list) and value:
                lines.append(f"        {field!r}: [")
                lines.extend(f"            {item!r}," for item in value)
                lines.append("        ],")
            else:
                lines.append(f"        {field!r}: {value!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    outputs = ((TABLE_PATH, render()), (PAGES_PATH, render_pages()),
               (SCRIPTS_PATH, render_scripts()), (TREE_PATH, render_tree()))
    if "--check" in argv:
        stale = [path for path, text in outputs
                 if (path.read_text() if path.exists() else "") != text]
        for path in stale:
            print(f"{path} is out of date: run `python -m qex.cli.fastgen`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs:
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
