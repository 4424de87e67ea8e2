"""Tell a job the size of its claim through the variables that runtimes already read.

Pure. A claim steers the queue, but a program that asks "how many cores?" hears the size of
the MACHINE, starts one thread per core, and crowds out every other job. Most runtimes take
their thread count or heap size from a variable, so qex writes the claim there.

When: only when the person gave BOTH a cpu and a mem claim (on the command line or in a job
file), `[claims] export_env` is true, the job did not opt out (`--no-limit-env-hints`), and
the environment capture is not `none`. A default or learned claim is not a decision someone
made: a job told "one core" would run single-threaded for no reason. The caller
(`qex.core.jobspec`) checks those conditions; this module only computes and writes.

A value already in the environment always wins, because someone put it there on purpose.

Memory limits for runtimes: the seeds' config page lists GOMEMLIMIT (Go) and NODE_OPTIONS
(node, at 3/4 of the claim), so both ARE written. GOMEMLIMIT is a soft target for Go's
collector, so the whole claim is the right value; node's `--max-old-space-size` covers the
JS heap only, so it gets 3/4 and leaves room for the rest of the process. The earlier qex
dropped both when it dropped limits; we keep limits, so we keep the hints.

`[claims] also` adds two that cost something, so neither is a default:
    java   JAVA_TOOL_OPTIONS (every JVM then prints "Picked up ..." on stderr)
    make   MAKEFLAGS=-jN (parallelises a Makefile whose author never ran it in parallel)

The keys written are returned and stored in `JobSpec.hint_keys`, so an OOM retry that raises
the claim rewrites exactly those keys (`rewrite_hints`) and never a value the user set.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping

from qex.core.units import MIB

#: Variables that take the number of cores.
CPU_HINTS: tuple[str, ...] = (
    "GOMAXPROCS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "RAYON_NUM_THREADS",
    "CARGO_BUILD_JOBS",
    "JULIA_NUM_THREADS",
    "DOTNET_PROCESSOR_COUNT",
    "POLARS_MAX_THREADS",
)

#: The names `[claims] also` accepts.
ALSO_CHOICES: tuple[str, ...] = ("java", "make")

#: A heap below this many MB is not worth a flag: the runtime's own default is better.
_MIN_HEAP_MB = 4


def _heap_mb(mem: int) -> int:
    """Three quarters of the claim in MB: the heap of a runtime that also needs non-heap memory."""
    return (mem // MIB) * 3 // 4


def claim_hints(cpu: int, mem: int, also: Iterable[str] = ()) -> dict[str, str]:
    """Every hint for a claim of `cpu` cores and `mem` bytes, in a stable order."""
    hints: dict[str, str] = {
        "QEX_CPU": str(cpu),
        "QEX_MEM": str(mem),
        "QEX_MEM_MB": str(mem // MIB),
    }
    for key in CPU_HINTS:
        hints[key] = str(cpu)
    hints["GOMEMLIMIT"] = str(mem)
    heap = _heap_mb(mem)
    if heap >= _MIN_HEAP_MB:
        hints["NODE_OPTIONS"] = f"--max-old-space-size={heap}"
    extras = set(also)
    if "java" in extras:
        options = f"-XX:ActiveProcessorCount={cpu}"
        if heap >= _MIN_HEAP_MB:
            options += f" -Xmx{heap}m"
        hints["JAVA_TOOL_OPTIONS"] = options
    if "make" in extras:
        hints["MAKEFLAGS"] = f"-j{cpu}"
    return hints


def apply_hints(
    env: MutableMapping[str, str], cpu: int, mem: int, also: Iterable[str] = ()
) -> list[str]:
    """Write the hints that `env` does not already hold; return the keys written."""
    written: list[str] = []
    for key, value in claim_hints(cpu, mem, also).items():
        if key in env:
            continue
        env[key] = value
        written.append(key)
    return written


def rewrite_hints(
    env: MutableMapping[str, str], hint_keys: Iterable[str], cpu: int, mem: int,
    also: Iterable[str] = (),
) -> None:
    """Give the keys that qex wrote earlier the values of a new claim (an OOM retry).

    Only `hint_keys` change: a key the user set was never written by qex, so it is never
    in that list. A key that the new claim no longer produces (a heap that became too
    small for a flag cannot happen, since claims only grow) keeps its old value.
    """
    fresh = claim_hints(cpu, mem, also)
    for key in hint_keys:
        if key in fresh:
            env[key] = fresh[key]
