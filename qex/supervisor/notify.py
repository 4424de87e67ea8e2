"""Tell the coordinator that a record changed, so it reads it now instead of at its next scan.

One `job_changed` request (`qex.core.protocol`) on the control socket, one line back, half a
second at most. Every failure is ignored: the coordinator may be gone or restarting, and it
rebuilds its view from the records, which are already on the disk when this is sent.
"""

from __future__ import annotations

import socket
from pathlib import Path

from qex.core import protocol

TIMEOUT_SECS = 0.5


def job_changed(socket_path: Path, job_id: str) -> bool:
    """True when the coordinator answered."""
    line = protocol.encode(protocol.job_changed(job_id))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(TIMEOUT_SECS)
            sock.connect(str(socket_path))
            sock.sendall(line)
            answer = b""
            while not answer.endswith(b"\n") and len(answer) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
            return bool(answer)
    except OSError:
        return False
