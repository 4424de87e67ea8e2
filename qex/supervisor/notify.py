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

#: The connection that the last note asked to keep (`keep=True`), for the next note: a job's
#: notes from `running` to its written result go over one connection, which the last of
#: them closes (a supervisor that serves another job must hold no descriptor it did not
#: hold before). Each new connection costs the coordinator an accept, a task and a
#: teardown on its only thread, and the ending note is on the path to the next job's start.
#: A kept connection holds no coordinator up: it idles only while its job runs.
_kept: socket.socket | None = None


def job_changed(socket_path: Path, job_id: str, *, pending: dict[str, Any] | None = None,
                note: str | None = None, record: dict[str, Any] | None = None,
                keep: bool = False) -> bool:
    """True when the coordinator answered.

    `pending` and `note`: a record that could not be written yet (a full disk) and the
    sentence that says so. The coordinator shows the sentence, and should this supervisor
    die before the write succeeds, it records `pending` itself.

    `record`: the record just written to status.json (renamed into place, so every reader
    sees it), sent along so the coordinator need not read the file back. A field that an
    older coordinator ignores: it reads the file, as before.

    `keep`: leave the connection open for the next note, which then uses it (or a new one,
    when the coordinator closed it meanwhile: a restart, say) and closes it unless it asks
    to keep it too.
    """
    global _kept
    message = protocol.job_changed(job_id, pending=pending, note=note)
    if record is not None:
        message["record"] = record
    line = protocol.encode(message)
    sock, _kept = _kept, None
    if sock is not None and not _exchange(sock, line):
        sock.close()
        sock = None
    if sock is None:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError:
            return False
        try:
            sock.settimeout(TIMEOUT_SECS)
            sock.connect(str(socket_path))
        except OSError:
            sock.close()
            return False
        if not _exchange(sock, line):
            sock.close()
            return False
    if keep:
        _kept = sock
    else:
        sock.close()
    return True


def _exchange(sock: socket.socket, line: bytes) -> bool:
    """Send one request line and read its answer line; False when no answer came."""
    try:
        sock.sendall(line)
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError:
        return False
    return answer.endswith(b"\n")
