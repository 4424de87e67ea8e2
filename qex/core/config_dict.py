"""A `Config` as plain data: what `qex config show --json` prints.

Pure. The dict holds only what TOML and JSON can both carry, so it is also a valid config
file: `parse_config(config_to_dict(c), ...) == c` for every valid `c`.
"""

from __future__ import annotations

import math
from typing import Any

from qex.core.config import BudgetValue, Config


def _num(value: float) -> int | float:
    """A whole number of seconds as an int, so `settle = 3` shows as 3 and not 3.0."""
    return int(value) if math.isfinite(value) and float(value).is_integer() else value


def _limit(value: float | None) -> int | float | str:
    return "none" if value is None else _num(value)


def _percent_text(fraction: float) -> str:
    """The shortest `N%` that parses back to exactly `fraction`, so the dict round-trips."""
    centre = fraction * 100
    candidates = [centre, math.nextafter(centre, math.inf), math.nextafter(centre, -math.inf)]
    for digits in range(18):
        for candidate in candidates:
            text = f"{candidate:.{digits}f}"
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            if float(text) / 100 == fraction:
                return f"{text}%"
    return f"{centre!r}%"


def _budget_out(value: BudgetValue) -> int | str:
    if value.absolute is not None:
        return value.absolute
    return _percent_text(0.75 if value.fraction is None else value.fraction)


def _engine_out(config: Config) -> dict[str, Any]:
    from qex.core.engine_config import engine_to_dict

    return engine_to_dict(config.engine)


def config_to_dict(config: Config) -> dict[str, Any]:
    """The resolved config as plain data that TOML and JSON can both hold.

    `parse_config(config_to_dict(c), ...) == c` for every valid `c`: a "no limit" shows as
    the word `none` (or `unlimited` for the log limit), and a default that depends on the
    machine (`[defaults] mem`, `[defaults] vram`) is left out, as it is in the file.
    """
    defaults: dict[str, Any] = {
        "cpu": config.defaults.cpu,
        "timeout": _limit(config.defaults.timeout),
        "max_queue_time": _limit(config.defaults.max_queue_time),
    }
    if config.defaults.mem is not None:
        defaults["mem"] = config.defaults.mem
    defaults["vram"] = config.defaults.vram or 0
    pools: list[dict[str, Any]] = []
    for pool in config.pools:
        entry: dict[str, Any] = {"name": pool.name}
        if pool.devices is not None:
            entry["devices"] = list(pool.devices)
            if pool.size is not None:
                entry["size"] = pool.size
            if pool.env is not None:
                entry["env"] = pool.env
        else:
            entry["count"] = pool.count
        pools.append(entry)
    logs = config.logs.max_bytes
    data: dict[str, Any] = {
        "budget": {"cpu": _budget_out(config.budget.cpu), "mem": _budget_out(config.budget.mem)},
        "system": {
            "reserve_mem": config.system.reserve_mem,
            "max_pressure": _num(config.system.max_pressure),
        },
        "enforce": {
            "mode": config.enforce.mode,
            "mem_overcommit": _num(config.enforce.mem_overcommit),
            "use_systemd": config.enforce.use_systemd,
        },
        "peers": {
            "enabled": config.peers.enabled,
            "dir": config.peers.dir,
            "stale_after": _num(config.peers.stale_after),
        },
        "queue": {
            "oversized": config.queue.oversized,
            "settle": _num(config.queue.settle),
            "max_bypass": config.queue.max_bypass,
        },
        "politeness": {
            "nice": config.politeness.nice,
            "io": config.politeness.io,
            "oom_score_adj": config.politeness.oom_score_adj,
        },
        "submit": {
            "env_capture": config.submit.env_capture,
            "minimal_env": list(config.submit.minimal_env),
        },
        "claims": {"export_env": config.claims.export_env, "also": list(config.claims.also)},
        "learn": {"enabled": config.learn.enabled, "margin": _num(config.learn.margin)},
        "logs": {"max_bytes": "unlimited" if logs is None else logs},
        "retry": {"on_oom": config.retry.on_oom, "growth": _num(config.retry.growth)},
        "history": {"keep": _num(config.history.keep)},
        "gc": {"keep": _num(config.gc.keep)},
        "defaults": defaults,
        "hooks": {
            "on_stop": list(config.hooks.on_stop),
            "on_stop_states": list(config.hooks.on_stop_states),
            "timeout": _num(config.hooks.timeout),
        },
        "engine": _engine_out(config),
    }
    if pools:
        data["pool"] = pools
    return data
