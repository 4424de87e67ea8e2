"""What earlier runs of a command teach about its claim.

Pure. A command is known by a key (`learn_key`): a hash of its directory and its argv (or,
for a fan-out, of the template with `{}`), so the store never holds a path or a command line.
Each entry keeps two kinds of sample:

- `peak`: a run that COMPLETED, with the highest memory it reached. Only completed runs count:
  a run that something stopped shows what it reached, not what it needed. The last five are
  kept, and the LARGEST is used, because a claim a little too large costs some capacity and
  a claim too small kills a job hours in.
- `oom`: a run that the kernel stopped for memory, PROVEN by the job's own cgroup. Its claim
  is a lower bound: the job needs more than that. Only the largest bound is kept, and a
  smaller peak later never removes it.

Samples of a kind this version does not know are kept as they are (a newer qex may have
written them) and never used.

`suggest` turns an entry into a claim: memory = the larger of (largest peak x margin) and
(largest OOM-killed claim x growth), at least 64 MiB, at most the memory budget; cores = the
busiest run's cpu time over its wall time, times the margin, at least 1.
"""

from __future__ import annotations

import math
from typing import Any

PEAK = "peak"
OOM = "oom"
#: Completed runs kept per command.
MAX_PEAKS = 5
#: Samples of unknown kinds kept per command (so an old qex does not grow a new one's file).
MAX_OTHER = 5
MIN_MEM = 64 * 1024 * 1024

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def _fnv(data: bytes, state: int) -> int:
    for byte in data:
        state = ((state ^ byte) * _FNV_PRIME) & _MASK
    return state


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def learn_key(cwd: str, argv: list[str]) -> str:
    """16 hex digits: FNV-1a over the directory, a separator byte, then each argument and
    a terminator byte, so that `a b` and `ab` and a different directory never collide by
    construction."""
    state = _fnv(_raw(cwd), _FNV_OFFSET)
    state = _fnv(b"\xfe", state)
    for arg in argv:
        state = _fnv(_raw(arg) + b"\xff", state)
    return f"{state:016x}"


def peak_sample(
    *, max_rss: int, cpu_secs: float, elapsed_secs: float, at: float, claim: int | None
) -> dict[str, Any]:
    return {"kind": PEAK, "max_rss": int(max_rss), "cpu_secs": float(cpu_secs),
            "elapsed_secs": float(elapsed_secs), "at": float(at), "claim": claim}


def oom_sample(
    *, claim: int, max_rss: int, cpu_secs: float, elapsed_secs: float, at: float
) -> dict[str, Any]:
    return {"kind": OOM, "max_rss": int(max_rss), "cpu_secs": float(cpu_secs),
            "elapsed_secs": float(elapsed_secs), "at": float(at), "claim": int(claim)}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return float(value)


def valid_sample(sample: object) -> bool:
    """A sample this version can use or keep: a JSON object with a text `kind`."""
    return isinstance(sample, dict) and isinstance(sample.get("kind"), str)


def _bound(sample: dict[str, Any]) -> float:
    """The memory an OOM sample proves too small: its claim (or, lacking one, its peak)."""
    claim = _number(sample.get("claim"))
    if claim is not None and claim > 0:
        return claim
    return _number(sample.get("max_rss")) or 0.0


def add_sample(entry: dict[str, Any] | None, sample: dict[str, Any], name: str) -> dict[str, Any]:
    """A new entry with `sample` added and the old samples pruned (the input is not changed)."""
    samples = [s for s in (entry or {}).get("samples", []) if valid_sample(s)]
    samples.append(sample)
    peaks = [s for s in samples if s["kind"] == PEAK][-MAX_PEAKS:]
    ooms = [s for s in samples if s["kind"] == OOM]
    others = [s for s in samples if s["kind"] not in (PEAK, OOM)][-MAX_OTHER:]
    kept_oom = [max(ooms, key=_bound)] if ooms else []
    # Keep the order of arrival among what stays, so "the last five" stays true next time.
    keep = {id(s) for s in (*peaks, *kept_oom, *others)}
    result = dict(entry or {})
    result["name"] = name
    result["samples"] = [s for s in samples if id(s) in keep]
    return result


def last_seen(entry: dict[str, Any]) -> float:
    """When the command last taught something: the newest `at` among its samples (0 if none),
    which orders the commands when the store must drop some."""
    times = [_number(s.get("at")) for s in entry.get("samples", []) if valid_sample(s)]
    return max((t for t in times if t is not None), default=0.0)


def suggest(
    entry: dict[str, Any] | None, margin: float, growth: float, mem_budget: int
) -> tuple[int, int] | None:
    """(cores, bytes) for the next run of this command, or None when nothing was learned."""
    if not entry:
        return None
    samples = [s for s in entry.get("samples", []) if valid_sample(s)]
    peaks = [_number(s.get("max_rss")) or 0.0 for s in samples if s["kind"] == PEAK]
    peaks = [p for p in peaks if p > 0]
    bounds = [_bound(s) for s in samples if s["kind"] == OOM]
    bounds = [b for b in bounds if b > 0]
    if not peaks and not bounds:
        return None
    mem = max(
        max(peaks, default=0.0) * margin,
        max(bounds, default=0.0) * growth,
    )
    mem_bytes = min(max(math.ceil(mem), MIN_MEM), max(mem_budget, MIN_MEM))
    busiest = 0.0
    for sample in samples:
        if sample["kind"] not in (PEAK, OOM):
            continue
        cpu = _number(sample.get("cpu_secs")) or 0.0
        elapsed = _number(sample.get("elapsed_secs")) or 0.0
        busiest = max(busiest, cpu / max(elapsed, 1.0))
    cores = max(1, math.ceil(busiest * margin - 1e-9))
    return cores, mem_bytes


def salvage(data: object) -> dict[str, Any]:
    """What can be kept from a store that did not parse as expected: the well-formed entries."""
    commands: dict[str, Any] = {}
    source = data.get("commands") if isinstance(data, dict) else None
    if isinstance(source, dict):
        for key, entry in source.items():
            kept = salvage_entry(entry) if isinstance(key, str) else None
            if kept is not None:
                commands[key] = kept
    return {"commands": commands}


def salvage_entry(entry: object) -> dict[str, Any] | None:
    """What can be kept of one command's entry: its usable samples and its name; None when
    no sample is usable."""
    samples = entry.get("samples") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(samples, list):
        return None
    good = [s for s in samples if valid_sample(s)]
    if not good:
        return None
    name = entry.get("name")
    return {"name": name if isinstance(name, str) else "", "samples": good}
