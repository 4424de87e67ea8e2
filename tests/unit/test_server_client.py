"""A connection that ends while the coordinator is not reading leaves no loose task."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from qex.coordinator.server import Client


class _BrokenReader:
    async def readline(self) -> bytes:
        raise BrokenPipeError(32, "Broken pipe")


class _Writer:
    def close(self) -> None:
        pass


def test_a_failed_read_is_taken_when_the_connection_closes() -> None:
    """The read that is always pending fails when the peer's end breaks; if the loop had
    stopped reading (the coordinator stops), `close` takes the failure, so asyncio does
    not log "Task exception was never retrieved" into daemon.log."""
    reported: list[dict[str, Any]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: reported.append(ctx))
        client = Client(_BrokenReader(), _Writer())  # type: ignore[arg-type]
        task = client.next_line()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert task.done()
        client.close()
        del task, client
        gc.collect()

    asyncio.run(scenario())
    assert reported == []
