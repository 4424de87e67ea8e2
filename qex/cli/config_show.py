"""What `qex config show` and `qex config path` print, without click.

`show` is the way to TEST a config file: it reads and validates the file exactly as the
coordinator does, then says in plain words what every setting does on this machine,
including whether `[enforce] mode` can really limit a job here. A mode that the machine
cannot honour is the one fault a person would otherwise never see, so that line names the
reason and the fix. A macOS user or an admin runs it to see whether limits hold, so the fast
path (`qex.cli.fast`) and the click command both call `show` and `show_path`: the two cannot
differ, and the fast one pays for no option framework.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
    import json

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


def show(*, as_json: bool) -> int:
    """Print what the config in force does here; exit 1 (through `load_config`, with the key
    to correct) when the file has a fault."""
    from qex.cli.common import get_paths, load_config
    from qex.core.config_parse import config_to_dict
    from qex.platform.detect import detect
    from qex.platform.host import platform_info
    from qex.platform.machine import machine as measure

    paths = get_paths(1)
    config = load_config(paths, 1)
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
        return 0
    rows = summary_lines(config, machine, paths, exists, caps)
    sys.stdout.write("".join(f"{label + ':':<{LABEL_WIDTH}}{text}\n" for label, text in rows))
    return 0


def show_path() -> int:
    """Print where the config file lives (it need not exist), with a note on stderr when
    nothing can be read there."""
    import stat

    from qex.cli.common import warn
    from qex.store.where import config_file

    where = config_file(os.environ)
    if where is None:  # an environment that only `Paths` names, or refuses
        from qex.cli.common import get_paths

        where = str(get_paths(1).config_file)
    sys.stdout.write(f"{where}\n")
    try:
        info = os.stat(where)
    except OSError:
        warn("no file exists there yet, so qex uses the default values; create it to change them")
        return 0
    if not stat.S_ISREG(info.st_mode):
        warn("that path is not a regular file, so qex refuses to read it; replace it with a "
             "regular file")
    return 0
