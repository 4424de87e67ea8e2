"""What `qex info` shows, without click: the coordinator (pid, version), the load against
the budget, other users, the health of the queue, pauses, pools, enforcement and the GPUs.

An agent asks `qex info --json` to see whether the machine has room, and asks it again; the
fast path (`qex.cli.fast`) and the click command both call `show_info`, so the two cannot
differ, and the fast one pays for no option framework.
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def show_info(*, as_json: bool, no_start: bool) -> int:
    """Print the answer; the exit code (1 when `no_start` and no coordinator operates)."""
    from qex import __version__
    from qex.cli.common import print_json, warn
    from qex.cli.fastread import info_answer
    from qex.cli.queue_lines import health_line

    info = info_answer(start=not no_start)
    if info is None:
        from qex.cli.common import get_paths
        from qex.cli.reach import open_connection

        conn = open_connection(get_paths(), start=not no_start)
        if conn is None:
            if as_json:
                print_json({"running": False})
            else:
                sys.stdout.write("no coordinator operates\n")
            return 1
        with conn:
            info = conn.fresh_info()
    now = time.time()
    fault = info.get("config_error")
    if isinstance(fault, str) and fault:
        from qex.core.names import printable

        for line in printable(fault).splitlines():
            warn(line)
    if as_json:
        document = {k: v for k, v in info.items() if k != "result"}
        document["running"] = True
        document["cli_version"] = __version__
        document["health_line"] = health_line(info, now)
        document["gpus"] = _as_dicts(local_gpus())
        print_json(document)
        return 0
    sys.stdout.write("\n".join(text_lines(info, now) + local_gpu_lines()) + "\n")
    return 0


def pool_lines(pools: Any) -> list[str]:
    from qex.core.names import safe_name
    from qex.core.unit_text import format_size

    lines: list[str] = []
    if not isinstance(pools, list):
        return lines
    for pool in pools:
        if not isinstance(pool, dict):
            continue
        name = safe_name(str(pool.get("name", "?")))
        line = f"pool {name}: {pool.get('used', 0)} of {pool.get('total', 0)} in use"
        peer = pool.get("peer_used")
        if isinstance(peer, int) and peer:
            line += f", {peer} held by other users"
        lines.append(line)
        for device in pool.get("devices") or []:
            if not isinstance(device, dict):
                continue
            capacity = device.get("capacity")
            used = device.get("used") or 0
            text = (f"  device {device.get('index')}: {format_size(used)} of "
                    f"{format_size(capacity)} given out" if isinstance(capacity, int)
                    else f"  device {device.get('index')}")
            if device.get("peer"):
                text += "; another user holds it"
            lines.append(text)
    return lines


def local_gpus() -> list[Any]:
    """This machine's NVIDIA GPUs through NVML, [] when NVML cannot answer here."""
    from qex.platform.nvml import nvml_gpus

    return nvml_gpus() or []


def local_gpu_lines() -> list[str]:
    """The live VRAM of each GPU, read here (the coordinator knows claims, not use)."""
    from qex.platform.nvml import gpu_use_lines

    return gpu_use_lines(local_gpus())


def _enforcement_line(data: Any) -> str | None:
    from qex.core.names import printable_line

    if not isinstance(data, dict):
        return None
    mode = data.get("mode", "?")
    if data.get("active"):
        backend = data.get("backend")
        return f"enforcement: {mode}, active" + (f" ({backend})" if backend else "")
    reason = printable_line(str(data.get("reason") or "no reason given"))
    line = f"enforcement: {mode}, NOT ACTIVE: {reason}"
    fix = data.get("fix")
    if isinstance(fix, str) and fix:
        line += f"; {printable_line(fix)}"
    return line


def text_lines(info: dict[str, Any], now: float) -> list[str]:
    """The text page of `qex info` (config faults go to stderr separately)."""
    from qex import __version__
    from qex.cli.queue_lines import health_line, others_line, pause_lines, pause_state_from_info
    from qex.core.names import printable_line
    from qex.core.unit_text import format_size

    def size(value: Any) -> str:
        return format_size(value) if isinstance(value, (int, float)) else "unknown"

    version = printable_line(str(info.get("version") or "unknown"))
    lines = [f"coordinator pid: {info.get('pid')}",
             f"version: {version} (this command: {__version__})"]
    if info.get("program_replaced"):
        lines.append("program: REPLACED since the coordinator started; it keeps the old code "
                     "until no job runs, and the next command starts the new one")
    lines += [
        f"jobs running: {info.get('jobs_running', 'unknown')}",
        f"jobs queued: {info.get('jobs_queued', 'unknown')}",
        f"cores: {info.get('cpu_claimed', '?')} of {info.get('cpu_budget', '?')} in use",
        f"memory: {size(info.get('mem_claimed'))} of {size(info.get('mem_budget'))} in use",
        others_line(info),
        health_line(info, now),
    ]
    if info.get("queue_state") in ("paused", "paused-by-fault"):
        lines.append("(the pause covers this user's queue only; other users are not paused)")
    state = pause_state_from_info(info)
    lines += [line for line in pause_lines({"queue": None, "locks": state["locks"]}, now)]
    lines += pool_lines(info.get("pools"))
    enforcement = _enforcement_line(info.get("enforcement"))
    if enforcement:
        lines.append(enforcement)
    platform = info.get("platform")
    if isinstance(platform, dict):
        from qex.platform.host import platform_lines

        lines += [printable_line(f"{label}: {text}") for label, text in platform_lines(platform)]
    return lines


def _as_dicts(gpus: list[Any]) -> list[dict[str, Any]]:
    from qex.core.model import asdict

    return [asdict(gpu) for gpu in gpus]
