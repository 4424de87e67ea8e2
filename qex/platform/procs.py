"""Process identity: is the pid in a record still the process that qex started?

`kill(pid, 0)` alone lies: pids are reused, and on machines whose PID 1 does not reap
orphans an exited process stays a zombie that still answers. So a recorded pid is trusted
only when the boot id matches, the process start time matches, and it is not a zombie.
Linux reads /proc; elsewhere psutil is imported lazily.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Iterator

_LINUX = sys.platform.startswith("linux")
_boot_id: str | None = None


def boot_id() -> str:
    """A string that changes at every boot."""
    global _boot_id
    if _boot_id is None:
        if _LINUX:
            try:
                with open("/proc/sys/kernel/random/boot_id") as handle:
                    _boot_id = handle.read().strip()
            except OSError:
                _boot_id = "unknown"
        else:
            import psutil

            _boot_id = f"boot-{int(psutil.boot_time())}"
    return _boot_id


def _linux_stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: split after the last ')'.
    close = raw.rfind(")")
    if close < 0:
        return None
    return raw[close + 2 :].split()


def start_token(pid: int) -> str | None:
    """The process start time as an opaque token, or None when there is no such process."""
    if _LINUX:
        fields = _linux_stat(pid)
        if fields is None or len(fields) < 20:
            return None
        return fields[19]  # starttime, field 22 of /proc/<pid>/stat
    try:
        import psutil

        return f"{psutil.Process(pid).create_time():.6f}"
    except Exception:
        return None


def is_zombie(pid: int) -> bool:
    if _LINUX:
        fields = _linux_stat(pid)
        return fields is not None and fields[0] in ("Z", "X")
    try:
        import psutil

        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except Exception:
        return False


def exists(pid: int) -> bool:
    """True when a process with this pid exists and is ours to signal (zombies excluded)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        if exc.errno == errno.EPERM:
            return False
        return False
    return not is_zombie(pid)


def same_process(pid: int | None, token: str | None) -> bool:
    """The pid is alive, not a zombie, and (when a token was recorded) started at that time."""
    if not pid or not exists(pid):
        return False
    if token is None:
        return True
    return start_token(pid) == token


def reap_exited() -> Iterator[int]:
    """Collect every child that has exited (never blocks), yielding their pids.

    A parent must do this on machines whose PID 1 does not reap: an unreaped child stays a
    zombie, and a zombie still answers `kill(pid, 0)`.
    """
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
        yield pid


def leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def signal_group(pgid: int, signum: int) -> bool:
    """Send a signal to a process group; False when the group is gone."""
    try:
        os.killpg(pgid, signum)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


SIGNALS: dict[str, int] = {
    name: int(getattr(signal, f"SIG{name}"))
    for name in ("TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2")
}


def parse_signal(text: str) -> int:
    """`TERM`, `SIGKILL`, `9`: a signal number; ValueError with the accepted forms."""
    word = text.strip().upper()
    if word.startswith("SIG"):
        word = word[3:]
    if word in SIGNALS:
        return SIGNALS[word]
    if word.isdigit() and 1 <= int(word) <= 64:
        return int(word)
    raise ValueError(
        f"`{text}` is not a signal; give TERM, KILL, INT, HUP, QUIT, USR1, USR2 "
        "or a number from 1 to 64"
    )


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
