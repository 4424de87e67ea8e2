"""Start a job with `os.posix_spawn` (vfork + exec in glibc) instead of fork + Python code.

Why: a Python `fork()` copies the page tables of the whole supervisor and then runs Python in
the child; in a supervisor-sized process that costs about 4 ms per job, posix_spawn about
0.2-0.4 ms. It is one step of the chain from one job's end to the next job's exec.

posix_spawn runs no Python in the child, so everything that `qex.supervisor.spawn._child`
does between fork and exec is had another way:

- new session, stdin /dev/null, stdout/stderr, every signal at its default
  (`jobprocess.JOB_DEFAULT_SIGNALS`) and an empty signal mask: posix_spawn's own attributes
  and file actions;
- nothing but 0-2 reaches the job: a close action for every inheritable descriptor >= 3
  (the others are close-on-exec already), listed from /proc/self/fd;
- the directory, nice and the I/O class: on Linux all three can belong to one thread (nice
  and the I/O class always do; the directory does after `unshare(CLONE_FS)`), and a child
  vforked from a thread starts with that thread's. So the spawn runs in a thread of its
  own that has set them, while the supervisor's main thread keeps its own;
- argv[0] is searched on the JOB's PATH exactly as `os.execvpe` searches it (glibc's
  posix_spawnp would search the supervisor's), and each candidate is spawned by its full
  path, so a file that is not a program fails with ENOEXEC (posix_spawn never hands it to
  /bin/sh).

One difference is glibc's and cannot be had from Python: a glibc without clone3 in
posix_spawn (before 2.38; Debian 12 has 2.36) sets its two internal signals, 32 and 33
(SIGCANCEL, SIGSETXID), to "ignored" in the child, and the exec keeps that. No program is
expected to rely on them: glibc and musl install their own handlers for them when they use
them, and SIGRTMIN is 34.

What the fast path cannot do is left to the fork path (`spawn` decides): a sandbox step before
exec (the job must never run outside its cgroup), oom_score_adj (per process, no thread can
carry it), a relative directory (relative to the supervisor's own, which the thread no longer
shares), any platform but Linux. A spawn that fails with EAGAIN or ENOMEM is also handed
back: posix_spawn cannot say whether the clone or the exec failed, and the two have
different sentences.

The threads: one per (nice, I/O class) that this supervisor asked for, started ahead of the
spawn when the runner can say so (`prepare`), kept until the process ends. They must not end
before their jobs do: a job that asks for a parent-death signal (PR_SET_PDEATHSIG) gets it
when the THREAD that started it ends.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import _thread
import errno
import os
import signal
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from qex.platform import jobprocess

if TYPE_CHECKING:
    from qex.supervisor.spawn import Child

#: posix_spawn's answer when the clone or the exec ran out of room; see the module text.
_AMBIGUOUS = (errno.EAGAIN, errno.ENOMEM)

#: posix_spawn's file actions, as os.posix_spawn takes them.
Actions = list[tuple[Any, ...]]


class StartFailed(Exception):
    """The job did not start; `stage` ("chdir" or "exec") and `code` make its sentence."""

    def __init__(self, stage: str, code: int) -> None:
        super().__init__(f"{stage}:{code}")
        self.stage = stage
        self.code = code


class _HandBack(Exception):
    """This start is for the fork path after all (see the module text)."""


def prepare(nice: int | None, io: str) -> bool:
    """Start the thread for (nice, io) now and do not wait for it: it sets itself up while
    the caller does other work (about a millisecond in a freshly forked supervisor).

    False when that thread was started by this call, so a spawn now would wait for its
    set-up; True when it was started earlier (a parked supervisor starts it before its go,
    one that serves again keeps it), or when none could start (the fork path waits for
    nothing)."""
    key = (nice, io)
    if key in _spawners:
        return True
    spawner = _new_spawner(nice, io)
    if spawner is None:
        return True
    _spawners[key] = spawner
    return False


def start(child: Child, env: Mapping[str, str], stdout_fd: int, stderr_fd: int) -> int | None:
    """The pid once the job's exec succeeded; None when the fork path must start it instead.

    Raises StartFailed when the job cannot start (the fork path would fail the same way).
    The caller has checked the rest (`spawn._fast_path_fits`). What does not depend on the
    thread's directory is done here, in the caller's thread: the spawner thread runs at the
    job's nice, and on a busy machine every step it takes waits for a share of a core.
    """
    spawner = _spawner(child.nice, child.io)
    if spawner is None:
        return None
    actions = _file_actions(stdout_fd, stderr_fd)
    if actions is None:
        return None
    candidates = _candidates(child.argv[0], env)
    umask = _current_umask()
    try:
        return spawner.call(lambda: _start_here(candidates, child, env, umask, actions))
    except _HandBack:
        return None


def started() -> bool:
    """True once this process has a spawner thread (a later fork is a threaded one)."""
    return bool(_spawners)


def _current_umask() -> int:
    """The caller's umask, which the spawner thread no longer shares after unshare(CLONE_FS).

    Reading it means setting it; only the caller's own thread sees the moment between.
    """
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _file_actions(stdout_fd: int, stderr_fd: int) -> Actions | None:
    """stdin from /dev/null, the two output descriptors, and a close for every inheritable
    descriptor >= 3, after the dup2s that read them (a close-on-exec one needs none); None
    when /proc cannot list them."""
    actions: Actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, stdout_fd, 1),
        (os.POSIX_SPAWN_DUP2, stderr_fd, 2),
    ]
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in names:
        fd = int(name)
        if fd < 3:
            continue
        try:
            if os.get_inheritable(fd):
                actions.append((os.POSIX_SPAWN_CLOSE, fd))
        except OSError:
            pass  # the listing's own descriptor, closed by now
    return actions


def _candidates(program: str, env: Mapping[str, str]) -> list[tuple[str, int]]:
    """Where `os.execvpe` would look for `program`, in its order (the program itself when it
    names a directory, else each entry of the JOB's PATH, the system default without one),
    each with the errno that stat() already gives it (ENOENT, ENOTDIR) or 0.

    An absolute candidate that stat() finds missing need not be spawned: exec would walk the
    same path and fail the same way, and a spawn costs a clone. A relative one is looked up
    from the job's directory, so only the spawner thread can try it.
    """
    if os.path.dirname(program):
        paths = [program]
    else:
        # os.get_exec_path(env) without its catch_warnings (a third of a millisecond in a
        # fresh supervisor); the same answer for a mapping of str, as a job's env is.
        path = env.get("PATH")
        directories = (os.defpath if path is None else path).split(os.pathsep)
        paths = [os.path.join(directory, program) for directory in directories]
    return [(path, _missing(path)) for path in paths]


def _missing(path: str) -> int:
    if not os.path.isabs(path):
        return 0
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError) as exc:
        return exc.errno or errno.ENOENT
    except OSError:
        pass  # the exec gives its own answer
    return 0


def _start_here(candidates: list[tuple[str, int]], child: Child, env: Mapping[str, str],
                umask: int, actions: Actions) -> int:
    """In the spawner thread: the job's umask and directory, then the spawn (a relative
    program or PATH entry is then found from the job's directory, as after the fork path's
    chdir)."""
    os.umask(umask)
    try:
        os.chdir(child.cwd)
    except OSError as exc:
        raise StartFailed("chdir", exc.errno or 0) from None
    return _spawn_first(candidates, child.argv, env, actions)


def _spawn_first(candidates: list[tuple[str, int]], argv: list[str], env: Mapping[str, str],
                 actions: Actions) -> int:
    """`os.execvpe`'s search, with posix_spawn: ENOENT and ENOTDIR go on quietly; any other
    error is remembered (the first one) and the search goes on; when none started, the
    remembered error wins over the last one.

    A candidate known to be missing is passed over, except the last when none was tried:
    an error that comes before the path is walked (E2BIG, say) must still be the answer,
    and then it is every candidate's. A ValueError or TypeError (an environment variable
    name the exec refuses) goes to the fork path, whose child reports it its own way.
    """
    saved: int | None = None
    last = errno.ENOENT
    tried = False
    for index, (path, missing) in enumerate(candidates):
        if missing and (tried or index < len(candidates) - 1):
            last = missing
            continue
        tried = True
        try:
            return os.posix_spawn(path, argv, env, file_actions=actions, setsid=True,
                                  setsigdef=jobprocess.JOB_DEFAULT_SIGNALS,
                                  setsigmask=())
        except (ValueError, TypeError):
            raise _HandBack from None
        except OSError as exc:
            last = exc.errno or 0
            if last in _AMBIGUOUS:
                raise _HandBack from None
            if saved is None and last not in (errno.ENOENT, errno.ENOTDIR):
                saved = last
    raise StartFailed("exec", saved if saved is not None else last)


class _Spawner:
    """A thread that starts jobs; its nice, I/O class and directory are what they inherit.

    One request at a time, handed over with two locks (`_thread`, not `threading`: nothing
    more is needed, and the supervisor's imports stay small).
    """

    def __init__(self, nice: int | None, set_ioprio: Callable[[], None] | None) -> None:
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._task: Callable[[], int] | None = None
        self._result: int | BaseException = 0
        self.prepared = False   # written by the thread before its first `_done` release
        self._ready: bool | None = None
        #: True when a caller stopped waiting (an exception from a signal handler): the
        #: hand-over is then out of step, and this thread is not asked again.
        self.broken = False
        _thread.start_new_thread(self._serve, (nice, set_ioprio))

    def ready(self) -> bool:
        """Whether the thread could set itself up; waits for it the first time."""
        if self._ready is None:
            self._wait()
            self._ready = self.prepared
        return self._ready

    def call(self, task: Callable[[], int]) -> int:
        """Run `task` in the thread; its result, or its exception raised here."""
        self._task = task
        self._go.release()
        self._wait()
        result, self._result, self._task = self._result, 0, None
        if isinstance(result, BaseException):
            raise result
        return result

    def _wait(self) -> None:
        try:
            self._done.acquire()
        except BaseException:
            self.broken = True
            raise

    def _serve(self, nice: int | None, set_ioprio: Callable[[], None] | None) -> None:
        try:
            self.prepared = _prepare_thread(nice, set_ioprio)
        except BaseException:
            self.prepared = False
        finally:
            self._done.release()
        if not self.prepared:
            return  # it started nothing, so its end orphans no job
        while True:
            self._go.acquire()
            task = self._task
            try:
                self._result = task() if task is not None else 0
            except BaseException as exc:
                self._result = exc
            self._done.release()


def _prepare_thread(nice: int | None, set_ioprio: Callable[[], None] | None) -> bool:
    """Give this thread a directory of its own and the job's nice and I/O class, as the
    forked child gives them to itself (a value that cannot be applied does not stop the job
    there either). Every signal is blocked here, so they all still go to the main thread, as
    when the supervisor had no other thread; the job's mask is set empty by posix_spawn."""
    # The C function: `signal.pthread_sigmask` turns the old mask into a set of enum members.
    _signal.pthread_sigmask(_signal.SIG_BLOCK, _blockable_signals())
    if not jobprocess.unshare_directory():
        return False
    jobprocess.be_polite(nice, set_ioprio)  # on Linux: this thread only
    return True


def _blockable_signals() -> set[int]:
    """Every signal a thread can block on Linux, as plain numbers: `signal.valid_signals()`
    makes an enum of each, a fifth of a millisecond per supervisor. glibc keeps 32 and 33 for
    itself (and refuses them here); the real-time ones start after them."""
    return {*range(1, 32), *range(signal.SIGRTMIN, signal.SIGRTMAX + 1)}


#: (nice, io) -> its thread, kept even when it could not set itself up (then: the fork path).
_spawners: dict[tuple[int | None, str], _Spawner] = {}


def kept_threads() -> int | None:
    """How many spawner threads this process keeps (those that set themselves up); None
    when one is out of step (`broken`), which no later job may meet."""
    if any(spawner.broken for spawner in _spawners.values()):
        return None
    return sum(1 for spawner in _spawners.values() if spawner.prepared)


def _new_spawner(nice: int | None, io: str) -> _Spawner | None:
    try:
        return _Spawner(nice, jobprocess.ioprio_setter(io))
    except RuntimeError:  # "can't start new thread": the fork path says what is short
        return None


def _spawner(nice: int | None, io: str) -> _Spawner | None:
    """The ready thread for (nice, io), started now if `prepare` did not; None: fork path."""
    key = (nice, io)
    spawner = _spawners.get(key)
    if spawner is None or spawner.broken:
        spawner = _new_spawner(nice, io)
        if spawner is None:
            return None
        _spawners[key] = spawner
    return spawner if spawner.ready() else None
