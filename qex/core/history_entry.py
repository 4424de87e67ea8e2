"""One id as the history file (`qex.store.history`) knows it, after its record is gone.

A plain value, kept apart from the file's reader so that the pure code that words a
refusal (`qex.core.word_match.history_message`) can take one without reaching into the
store.
"""

from __future__ import annotations

from typing import Any

from qex.core.model import dataclass


@dataclass(frozen=True)
class HistoryEntry:
    """What the history knows of one id (the merge of its lines, the last one winning)."""

    id: str
    name: str
    submitted_at: float
    removed_at: float | None = None
    final_state: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "submitted_at": self.submitted_at,
            "removed_at": self.removed_at, "final_state": self.final_state,
        }
