"""`qex config show [--json]`, `qex config path`, `qex config init` and `qex config set`.

`show` is the way to TEST a config file: it reads and validates the file exactly as the
coordinator does, then says in plain words what every setting does on this machine,
including whether `[enforce] mode` can really limit a job here. A mode that the machine
cannot honour is the one fault a person would otherwise never see, so that line names the
reason and the fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from qex.core.config import BudgetValue, Config, Machine
from qex.platform.detect import Capabilities
from qex.store.paths import Paths

LABEL_WIDTH = 14


def _cores(count: int) -> str:
    return f"{count} core" if count == 1 else f"{count} cores"


def _share(value: BudgetValue, unit: str) -> str:
    """`75% of the cores`, or `the cores set in [budget]` for an absolute budget."""
    if value.absolute is not None:
        return f"the {unit} set in [budget]"
    fraction = 0.75 if value.fraction is None else value.fraction
    return f"{round(fraction * 100, 3):g}% of the {unit}"


def enforcement_info(config: Config, caps: Capabilities) -> dict[str, Any]:
    """The `enforcement` object of `config show --json`: the summary, and the probe."""
    from qex.platform.detect import enforcement_state

    return {
        **enforcement_state(config.enforce.mode, caps),
        # Through JSON once, so a detail the probe adds later (a path, say) cannot break
        # `--json`.
        "capabilities": json.loads(json.dumps(caps.to_dict(), default=str)),
    }


def enforcement_line(config: Config, caps: Capabilities) -> str:
    """What `[enforce] mode` really does on this machine, in one line."""
    from qex.platform.detect import enforcement_summary

    return enforcement_summary(config.enforce.mode, caps,
                               mem_overcommit=config.enforce.mem_overcommit)


def summary_lines(  # noqa: PLR0912, PLR0915 (one line per setting, in page order)
    config: Config, machine: Machine, paths: Paths, exists: bool, caps: Capabilities
) -> list[tuple[str, str]]:
    """(label, text) rows for `config show`."""
    from qex.core.names import visible
    from qex.core.units import format_duration, format_size

    cpu_budget = config.cpu_budget(machine)
    mem_budget = config.mem_budget(machine)
    d = config.defaults
    rows: list[tuple[str, str]] = []
    state = "read" if exists else "absent; the default values apply"
    rows.append(("config file", f"{visible(str(paths.config_file))} ({state})"))
    rows.append(("machine", f"{_cores(machine.cores)}, {format_size(machine.mem_total)} of memory"))
    shares = ", ".join(
        s for s in (_share(config.budget.cpu, "cores"), _share(config.budget.mem, "memory")) if s
    )
    rows.append(("budget", f"{_cores(cpu_budget)}, {format_size(mem_budget)} of memory ({shares})"))
    default_mem = format_size(d.default_mem(machine))
    if d.mem is None:
        default_mem += " (the machine memory divided by its cores)"
    timeout = f"time limit {format_duration(d.timeout)}" if d.timeout else "no time limit"
    vram = f"{format_size(d.vram)} of each GPU" if d.vram else "the whole of each GPU"
    rows.append(("default job", f"{_cores(d.cpu)}, {default_mem}, {timeout}; with --gpu, {vram}"))
    if d.max_queue_time:
        rows.append(("queue limit", (
            f"{format_duration(d.max_queue_time)}; a job that waits longer "
            "becomes `expired`"
        )))
    else:
        rows.append(("queue limit", "none; a job waits for capacity with no end"))
    rows.append((
        "keep free",
        f"{format_size(config.system.reserve_mem)} of memory, and no start while memory "
        f"pressure is above {config.system.max_pressure:g}%",
    ))
    if config.logs.max_bytes is None:
        rows.append(("job output", "NO LIMIT; a job that writes without end can fill the disk"))
    else:
        rows.append((
            "job output",
            f"{format_size(config.logs.max_bytes)} for each stream of each job; qex keeps the "
            "head and the tail and counts what it dropped",
        ))
    p = config.politeness
    rows.append(("politeness", (
        f"nice {p.nice}, io {p.io}, oom_score_adj {p.oom_score_adj} (io and "
        "oom_score_adj on Linux)"
    )))
    if config.retry.on_oom:
        rows.append((
            "retry",
            f"after a proven memory kill, raise the claim x{config.retry.growth:g} and run "
            f"again, up to {config.retry.on_oom} time(s)",
        ))
    else:
        rows.append(("retry", "no new attempt after a memory kill ([retry] on_oom = 0)"))
    if config.learn.enabled:
        rows.append(("learning", (
            f"on; the next claim of a command is its largest use "
            f"x{config.learn.margin:g}"
        )))
    else:
        rows.append(("learning", "off; a job with no claim gets the default job"))
    if config.peers.enabled:
        peers_dir = visible(str(paths.peers_dir(config.peers.dir)))
        rows.append((
            "peers",
            f"on, in {peers_dir}; a record older than {format_duration(config.peers.stale_after)} "
            "is stale",
        ))
    else:
        rows.append(("peers", "off ([peers] enabled = false); other users' claims are not counted"))
    q = config.queue
    oversized = {
        "run-when-idle": (
            f"a job larger than the budget starts alone after "
            f"{format_duration(q.settle)} of quiet"
        ),
        "reject": "a job larger than the budget is refused at submission",
        "queue": "a job larger than the budget waits until the budget grows",
    }[q.oversized]
    rows.append(("oversized", f"{q.oversized}: {oversized}"))
    rows.append(("queue order", f"up to {q.max_bypass} job(s) may pass the job at the front"))
    capture = config.submit.env_capture
    if capture == "minimal":
        rows.append(("environment", (
            f"capture minimal: "
            f"{', '.join(config.submit.minimal_env) or 'nothing'}"
        )))
    elif capture == "none":
        rows.append(("environment", "capture none; a job gets no variable from the shell"))
    else:
        rows.append(("environment", "capture all; a job gets every variable of the shell"))
    if not config.claims.export_env:
        hints = "no; [claims] export_env = false"
    elif capture == "none":
        hints = 'no; [submit] env_capture = "none" gives a job no variable that qex chose'
    else:
        hints = "yes, when --cpu and --mem are both given"
        if config.claims.also:
            hints += f"; also {', '.join(config.claims.also)}"
    rows.append(("claim hints", hints))
    hooks = config.hooks
    if hooks.on_stop:
        args = len(hooks.on_stop) - 1
        rows.append((
            "stop hook",
            f"{visible(hooks.on_stop[0])} ({args} argument(s)); for "
            f"{', '.join(hooks.on_stop_states)}; "
            f"time limit {format_duration(hooks.timeout)}",
        ))
    else:
        rows.append(("stop hook", "none"))
    rows.append((
        "records",
        f"ids kept {format_duration(config.history.keep)} after removal; `qex gc` deletes "
        f"records older than {format_duration(config.gc.keep)}",
    ))
    rows.append(("pools", _pools_text(config)))
    rows.append(("enforcement", enforcement_line(config, caps)))
    from qex.platform.host import platform_info, platform_lines

    rows += platform_lines(platform_info())
    return rows


def _pools_text(config: Config) -> str:
    from qex.core.units import format_size

    if not config.pools:
        return "none; --gpu and --claim need a [[pool]] in the config file"
    parts: list[str] = []
    for pool in config.pools:
        if pool.devices is not None:
            sizes = sorted(set(pool.devices))
            each = "/".join(format_size(s) for s in pool.devices)
            if len(sizes) == 1:
                each = format_size(sizes[0])
            text = (
                f"{pool.name}: {len(pool.devices)} device(s), {each} {pool.size or 'capacity'} "
                "each"
            )
            if pool.env:
                text += f", sets {pool.env}"
        else:
            text = f"{pool.name}: {pool.count} unit(s)"
        parts.append(text)
    return "; ".join(parts)


def _load() -> tuple[Paths, Config]:
    from qex.cli.common import get_paths, load_config

    paths = get_paths(1)
    return paths, load_config(paths, 1)


@click.group(name="config")
def command() -> None:
    """Show the configuration in force, or where its file lives."""


@command.command(name="show")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved configuration as JSON.")
def show(as_json: bool) -> None:
    """Read and check the config file, then say what each setting does on this machine.

    A file with a fault gives exit code 1 and names the key to correct.
    """
    from qex.core.config_parse import config_to_dict
    from qex.platform.detect import detect
    from qex.platform.host import platform_info
    from qex.platform.machine import machine as measure

    paths, config = _load()
    machine = measure()
    caps = detect(use_systemd=config.enforce.use_systemd)
    exists = os.path.exists(paths.config_file)
    if as_json:
        from qex.cli.common import print_json

        print_json({
            "path": str(paths.config_file),
            "exists": exists,
            "machine": {"cores": machine.cores, "mem_total": machine.mem_total},
            "resolved": {
                "cpu_budget": config.cpu_budget(machine),
                "mem_budget": config.mem_budget(machine),
                "default_cpu": config.defaults.cpu,
                "default_mem": config.defaults.default_mem(machine),
                "peers_dir": str(paths.peers_dir(config.peers.dir)),
            },
            "config": config_to_dict(config),
            "enforcement": enforcement_info(config, caps),
            "platform": platform_info(),
        })
        return
    rows = summary_lines(config, machine, paths, exists, caps)
    for label, text in rows:
        click.echo(f"{label + ':':<{LABEL_WIDTH}}{text}")


@command.command(name="path")
def path() -> None:
    """Print the path of the config file (it need not exist)."""
    import stat

    from qex.cli.common import get_paths, warn

    paths = get_paths(1)
    click.echo(str(paths.config_file))
    try:
        info = os.stat(paths.config_file)
    except OSError:
        warn("no file exists there yet, so qex uses the default values; create it to change them")
        return
    if not stat.S_ISREG(info.st_mode):
        warn(
            "that path is not a regular file, so qex refuses to read it; replace it with a "
            "regular file"
        )


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
