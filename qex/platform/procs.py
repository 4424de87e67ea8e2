"""Process identity: is the pid in a record still the process that qex started?

`kill(pid, 0)` alone lies: pids are reused, and on machines whose PID 1 does not reap
orphans an exited process stays a zombie that still answers. So a recorded pid is trusted
only when the boot id matches, the process start time matches, and it is not a zombie.

Linux reads /proc. The portable implementation (macOS, or `QEX_PLATFORM=portable`; see
`qex.platform.host`) asks `ps` for the state and the start time of one pid: one small
process per question instead of one file read, and a start time to the second (`lstart`)
instead of to the clock tick, so two processes that reuse a pid within the same second
look the same. A token recorded by one implementation says nothing to the other (their
forms differ), so such a comparison falls back to "alive and not a zombie".
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator

from qex.platform import host

#: Portable start tokens begin with this, so they are never compared with /proc ticks.
PS_TOKEN = "ps:"
_boot_id: str | None = None


def boot_id() -> str:
    """A string that changes at every boot."""
    global _boot_id
    if _boot_id is None:
        if host.linux():
            try:
                with open("/proc/sys/kernel/random/boot_id") as handle:
                    _boot_id = handle.read().strip()
            except OSError:
                _boot_id = "unknown"
        else:
            # pid 1 starts with the system (launchd on macOS), so its start time names a boot.
            found = ps_state(1)
            _boot_id = f"boot-{found[1]}" if found is not None else "unknown"
    return _boot_id


def forget_boot_id() -> None:
    """Ask again at the next `boot_id()` (tests that switch the implementation)."""
    global _boot_id
    _boot_id = None


def parse_ps_states(output: str) -> dict[int, tuple[str, str]]:
    """{pid: (state letters, start time)} from `ps -o pid= -o stat= -o lstart= -p ...`."""
    found: dict[int, tuple[str, str]] = {}
    for line in output.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[2].strip():
            found[int(parts[0])] = (parts[1], " ".join(parts[2].split()))
    return found


def ps_states(pids: list[int]) -> dict[int, tuple[str, str]]:
    """The portable view of a few processes (one `ps` for all): state and start time."""
    wanted = [pid for pid in pids if pid > 0]
    if not wanted:
        return {}
    try:
        done = subprocess.run(
            ["ps", "-o", "pid=", "-o", "stat=", "-o", "lstart=",
             "-p", ",".join(str(pid) for pid in wanted)],
            capture_output=True, text=True, check=False, timeout=10,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_ps_states(done.stdout)


def ps_state(pid: int) -> tuple[str, str] | None:
    """One process's `ps` state and start time, None when there is no such process. The
    first question about this process itself also learns the boot id (pid 1) in the same
    `ps`: a supervisor asks both at its start, and each `ps` costs milliseconds."""
    global _boot_id
    if pid == os.getpid() and _boot_id is None:
        found = ps_states([1, pid])
        if 1 in found:
            _boot_id = f"boot-{found[1][1]}"
        return found.get(pid)
    return ps_states([pid]).get(pid)


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
    if host.linux():
        fields = _linux_stat(pid)
        if fields is None or len(fields) < 20:
            return None
        return fields[19]  # starttime, field 22 of /proc/<pid>/stat
    found = ps_state(pid)
    return PS_TOKEN + found[1] if found is not None else None


def _dead_letter(state: str) -> bool:
    """Z (zombie) or X (dead) as the first letter of a process state."""
    return state[:1] in ("Z", "X")


def is_zombie(pid: int) -> bool:
    if host.linux():
        fields = _linux_stat(pid)
        return fields is not None and _dead_letter(fields[0])
    found = ps_state(pid)
    return found is not None and _dead_letter(found[0])


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
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    if host.linux():
        # One read of /proc/<pid>/stat answers both questions: the state (field 3) and the
        # start time (field 22). The coordinator asks twice for every job it starts.
        fields = _linux_stat(pid)
        if fields is None or _dead_letter(fields[0]):
            return False
        if token is None or token.startswith(PS_TOKEN):
            return True
        return len(fields) >= 20 and fields[19] == token
    found = ps_state(pid)  # one `ps` answers both questions
    if found is None or _dead_letter(found[0]):
        return False
    if token is None or not token.startswith(PS_TOKEN):
        return True
    return PS_TOKEN + found[1] == token


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
