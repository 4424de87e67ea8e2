"""The interface every engine offers the coordinator, and the lazy registry of engines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from qex.coordinator.state import Coordinator, Job
    from qex.core.records import JobSpec


class Engine(Protocol):
    #: The word of `[engine] kind` and `--engine`.
    kind: str

    def refuse(self, spec: JobSpec) -> str | None:
        """A sentence when this engine can never run the job (checked at submit), else None."""

    def accept(self, job: Job) -> None:
        """Take a job that the coordinator has just recorded as `queued`."""

    def adopt(self, job: Job) -> None:
        """Take a job found on disk at coordinator start (a previous coordinator's job)."""

    def kill(self, job: Job, signum: int) -> dict[str, Any]:
        """Stop a running job; the protocol answer."""

    def cancel(self, job: Job) -> None:
        """Take a queued job out of the engine's queue; the coordinator records `cancelled`."""

    def close(self) -> None:
        """The coordinator stops: end background work (jobs keep running)."""

    def describe(self) -> dict[str, Any]:
        """What `qex info --json` shows of this engine."""


#: Engines that are not this machine, by kind: module and class, imported on first use.
_REMOTE: dict[str, tuple[str, str]] = {
    "slurm": ("qex.engine.slurm.engine", "SlurmEngine"),
}


def known_kinds() -> tuple[str, ...]:
    return ("local", *_REMOTE)


def engine_for(coord: Coordinator, kind: str) -> Engine:
    """The coordinator's engine of this kind, made on first use (one per coordinator)."""
    found: Engine | None = coord.engines.get(kind)
    if found is not None:
        return found
    if kind == "local":
        from qex.engine.local import LocalEngine

        made: Engine = LocalEngine(coord)
    else:
        if kind not in _REMOTE:
            raise KeyError(kind)
        import importlib

        module_name, class_name = _REMOTE[kind]
        made = getattr(importlib.import_module(module_name), class_name)(coord)
    coord.engines[kind] = made
    return made


def remote_engine(coord: Coordinator, job: Job) -> Engine | None:
    """The engine of a job that does not run on this machine, or None for a local job."""
    kind = job.record.engine
    if not kind or kind == "local":
        return None
    return engine_for(coord, kind)
