"""`Wire.ask` with a tick: the work between reads runs while the answer is awaited, and a
tick that says stop ends the wait without an answer (the lean follow's Ctrl-C)."""

from __future__ import annotations

import socket
import threading
import time

from qex.cli.wire import TICK_SECS, Wire, encode


def _pair() -> tuple[Wire, socket.socket]:
    ours, theirs = socket.socketpair()
    return Wire(ours), theirs


def test_the_tick_runs_until_the_answer_comes() -> None:
    wire, peer = _pair()
    ticks: list[float] = []

    def answer_later() -> None:
        peer.recv(1 << 16)
        time.sleep(4 * TICK_SECS)
        peer.sendall(encode({"result": "status", "status": {"id": "x", "state": "completed"}}))

    helper = threading.Thread(target=answer_later)
    helper.start()
    got = wire.ask({"op": "wait", "id": "x"}, 5.0, tick=lambda: ticks.append(1) is None)
    helper.join()
    assert got == {"result": "status", "status": {"id": "x", "state": "completed"}}
    assert len(ticks) >= 2
    wire.close()
    peer.close()


def test_a_tick_that_says_stop_ends_the_wait() -> None:
    wire, peer = _pair()
    calls = []

    def tick() -> bool:
        calls.append(1)
        return len(calls) < 3

    began = time.monotonic()
    assert wire.ask({"op": "wait", "id": "x"}, 30.0, tick=tick) is None
    assert len(calls) == 3 and time.monotonic() - began < 10
    wire.close()
    peer.close()


def test_without_a_tick_the_deadline_ends_the_wait() -> None:
    wire, peer = _pair()
    assert wire.ask({"op": "wait", "id": "x"}, 0.1) is None
    wire.close()
    peer.close()
