"""The modules a supervisor imports on its way from its first line to the job's exec.

Two kinds of process import them before they know their job: the fork server (so that every
child it forks shares them) and a standby supervisor waiting in its scope
(`qex.supervisor.standby`), so that neither pays for them between a job's admission and its
start. One list, so that the two cannot drift apart.
"""

from __future__ import annotations


def load_job_modules() -> None:
    """Import what a supervisor would otherwise import lazily on its way to `running`.

    The config parser (`tomllib`, with `datetime` and `string`) is the largest; then the
    sandbox choice and both sandboxes (a scoped supervisor opens its job cgroup with
    `cgroup_sandbox`), the pool code, the usage store and the stop hook; and the libc
    functions that the job's start looks up through ctypes.
    """
    import tomllib  # noqa: F401

    import qex.core.pools
    import qex.platform.cgroup_sandbox
    import qex.platform.procgroup
    import qex.platform.select
    import qex.store.usage
    import qex.supervisor.hook  # noqa: F401
    from qex.platform import jobprocess

    jobprocess.preload()
