"""What the coordinator does first, before its own imports: raise its descriptor limit.

Kept apart from `qex.coordinator.main`, which imports the config modules, so that the limit
is in place before anything that inherits it (the fork server and its supervisors) exists.
"""

from __future__ import annotations


def raise_open_file_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: every connection and job costs descriptors,
    and the soft default (often 1024) is a convention, not a resource the machine lacks."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard and (hard == resource.RLIM_INFINITY or soft < hard):
            # An unlimited hard limit is not a number select() or a kernel table accepts.
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):
        pass
