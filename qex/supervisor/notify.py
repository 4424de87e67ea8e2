"""Tell the coordinator that a record changed, so it reads it now instead of at its next scan.

One `job_changed` request (`qex.core.protocol`) on the control socket, one line back, half a
second at most. Every failure is ignored: the coordinator may be gone or restarting, and it
rebuilds its view from the records, which are already on the disk when this is sent (or, when
the disk refused the record, the record travels with the note; see `Runner.save_final`).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from qex.core import protocol

TIMEOUT_SECS = 0.5


def job_changed(socket_path: Path, job_id: str, *, pending: dict[str, Any] | None = None,
                note: str | None = None, record: dict[str, Any] | None = None) -> bool:
    """True when the coordinator answered.

    `pending` and `note`: a record that could not be written yet (a full disk) and the
    sentence that says so. The coordinator shows the sentence, and should this supervisor
    die before the write succeeds, it records `pending` itself.

    `record`: the record just written to status.json (renamed into place, so every reader
    sees it), sent along so the coordinator need not read the file back. A field that an
    older coordinator ignores: it reads the file, as before.
    """
    message = protocol.job_changed(job_id, pending=pending, note=note)
    if record is not None:
        message["record"] = record
    line = protocol.encode(message)
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
