"""`qex config show [--json]`, `qex config path`, `qex config init` and `qex config set`.

`show` and `path` are bodies in `qex.cli.config_show`, which the fast path calls too; `init`
and `set` write the file (`qex.cli.config_write`), through click only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.group(name="config")
def command() -> None:
    """Show the configuration in force, or where its file lives."""


@command.command(name="show")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved configuration as JSON.")
def show(as_json: bool) -> None:
    """Read and check the config file, then say what each setting does on this machine.

    A file with a fault gives exit code 1 and names the key to correct.
    """
    from qex.cli.config_show import show as show_config

    show_config(as_json=as_json)


@command.command(name="path")
def path() -> None:
    """Print the path of the config file (it need not exist)."""
    from qex.cli.config_show import show_path

    show_path()


@command.command(name="init")
@click.option("--force", is_flag=True, help="Replace a config file that exists.")
@click.option("--print", "to_stdout", is_flag=True, help="Print the file; write nothing.")
@click.option("--sysfs", "sys_root", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/sys"), hidden=True, help="Another sysfs root (tests).")
def init(*, force: bool, to_stdout: bool, sys_root: Path) -> None:
    """Write a starter config file for this machine: all its cores and 80% of its memory
    as the budget, memory limits on where they can work, and a [[pool]] for the GPUs that
    were found with a known VRAM.

    The file is checked by the same parser as every config before it is written, and
    written by tomli-w, so it holds no comments; `qex config show` explains each setting.
    An existing file is kept unless --force is given."""
    from qex.cli.common import die, get_paths, warn
    from qex.cli.config_write import WriteError, check, exists, render, starter, write

    paths = get_paths(1)
    target = paths.config_file
    if exists(target) and not (force or to_stdout):
        die(f"{target} exists already; `qex config set KEY VALUE` changes one key, and "
            "`qex config init --force` replaces the whole file", 1)
    data, notes = starter(paths, sys_root=sys_root)
    try:
        check(data, target)
    except WriteError as exc:
        die(f"the starter config does not pass the parser ({exc}); please report this", 1)
    if to_stdout:
        click.echo(render(data), nl=False)
        return
    write(target, data)
    click.echo(f"qex: wrote {target}")
    for note in notes:
        warn(note)


@command.command(name="set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
def set_(*, key: str, value: str) -> None:
    """Set one KEY (SECTION.KEY, such as budget.cpu or enforce.mode) to VALUE in the config
    file, creating the file if needed.

    \b
    qex config set budget.cpu 4
    qex config set budget.mem 80%
    qex config set enforce.mode hard
    qex config set submit.minimal_env '["PATH", "HOME"]'

    VALUE is read as TOML (4, true, "text", [..]); anything else is taken as a string. The
    new file is checked by the same parser as `qex config show` and written only if it
    loads. It is written by tomli-w, which keeps the data and not the text: comments and
    layout of a hand-edited file are lost, so when the old file held comments it is kept
    as qex.toml.bak beside the new one."""
    from qex.cli.common import die, get_paths, warn
    from qex.cli.config_write import (
        WriteError,
        check,
        has_comments,
        parse_value,
        read_existing,
        set_key,
        write,
    )

    paths = get_paths(1)
    target = paths.config_file
    try:
        data, text = read_existing(target)
        updated = set_key(data, key, parse_value(value))
        check(updated, target)
    except WriteError as exc:
        die(f"{exc}; the config file was not changed", 2)
    if text is not None and has_comments(text):
        from qex.store.atomic import write_bytes

        backup = target.with_name(target.name + ".bak")
        write_bytes(backup, text.encode(), mode=0o644)
        warn(f"the old file had comments, which tomli-w does not keep; it is saved as {backup}")
    write(target, updated)
    click.echo(f"qex: set {key} = {render_value(updated, key)} in {target}")


def render_value(data: dict[str, Any], key: str) -> str:
    import tomli_w

    section, _, name = key.rpartition(".")
    holder = data.get(section, {}) if section else data
    return tomli_w.dumps({"v": holder[name]})[4:].strip()
