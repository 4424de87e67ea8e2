"""TEST ONLY: a sandbox whose evidence is read from a JSON file (env `QEX_TEST_SANDBOX`).

End-to-end tests cannot make the kernel kill a job for memory on demand, and must not need a
cgroup. A test writes a script and points `QEX_TEST_SANDBOX` at it:

    {"active": true, "backend": "test", "reason": null,
     "attempts": [{"oom_kills": 1, "proven": true, "source": "cgroup", "peak": 1048576}],
     "limits_log": "/tmp/x/limits.jsonl"}

Attempt N gets `attempts[N-1]` as its evidence (the last entry repeats; none = no evidence),
and the limits of every attempt are appended to `limits_log` as one JSON line, so a test can
check the soft/hard arithmetic. The job itself still runs for real: a test fakes an OOM kill
with a job that sends itself SIGKILL. Nothing outside tests sets this variable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.core import model
from qex.platform.sandbox import Evidence, Limits

if TYPE_CHECKING:
    from qex.core.records import Enforcement

ENV_VAR = "QEX_TEST_SANDBOX"


class ScriptedSandbox:
    def __init__(self, script: Path) -> None:
        data = json.loads(script.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{script} does not hold a JSON object")
        self._data: dict[str, Any] = data
        self.active = bool(data.get("active", False))
        self.reason: str | None = data.get("reason")
        self.backend = str(data.get("backend", "test"))
        self._attempt = 0
        self._limits = Limits()

    def begin_attempt(self, limits: Limits) -> None:
        self._attempt += 1
        self._limits = limits
        log = self._data.get("limits_log")
        if log:
            with open(log, "a") as handle:
                handle.write(json.dumps(model.asdict(limits)) + "\n")

    def child_preexec(self) -> None:
        """Nothing to join."""
        return None

    def evidence(self) -> Evidence:
        attempts = self._data.get("attempts") or []
        if not attempts:
            return Evidence()
        entry = attempts[min(self._attempt, len(attempts)) - 1]
        return Evidence(
            oom_kills=int(entry.get("oom_kills", 0)),
            proven=bool(entry.get("proven", False)),
            source=entry.get("source"),
            peak=entry.get("peak"),
        )

    def describe(self) -> Enforcement:
        return {
            "mode": self._limits.mode,
            "active": self.active,
            "reason": self.reason,
            "backend": self.backend,
            "unit": None,
            "memory_max": self._limits.memory_max if self.active else None,
            "memory_high": self._limits.memory_high if self.active else None,
        }

    def close(self) -> None:
        """Nothing is held."""
