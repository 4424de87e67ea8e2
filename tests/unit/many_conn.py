"""A stand-in for the full client's connection in the commands that act on many jobs at
once (`cancel_many`, `clean_many`): it records what was sent and answers each job as told,
or, as a coordinator older than those requests, knows no request for several jobs."""

from __future__ import annotations

from typing import Any

from qex.client.errors import Refused


class ManyConn:
    def __init__(self, one: str, *, knows_many: bool, refused: dict[str, dict[str, Any]]
                 ) -> None:
        self.knows_many = knows_many
        self.refused = refused
        self.sent: list[tuple[str, Any]] = []
        self.many_op = f"{one}_many"
        setattr(self, self.many_op, self._many)
        setattr(self, one, lambda job_id: self._one(one, job_id))

    def _answer(self, job_id: str) -> dict[str, Any]:
        return self.refused.get(job_id, {"result": "ok"})

    def _many(self, job_ids: list[str]) -> list[dict[str, Any]] | None:
        self.sent.append((self.many_op, list(job_ids)))
        return [self._answer(j) for j in job_ids] if self.knows_many else None

    def _one(self, op: str, job_id: str) -> None:
        self.sent.append((op, job_id))
        answer = self._answer(job_id)
        if answer["result"] == "error":
            raise Refused(answer["kind"], answer["message"])
