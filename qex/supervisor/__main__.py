"""`python -m qex.supervisor <job_id>`: the process that runs one job (`qex.supervisor.main`);
`python -m qex.supervisor --forkserver`: the fork server (`qex.supervisor.forkserver`);
`python -m qex.supervisor --standby`: a supervisor that waits for its job in a scope made
ahead of need (`qex.supervisor.standby`).

The choice is made here, so `main` and `forkserver` do not import each other.
"""

from __future__ import annotations

import sys


def entry(argv: list[str]) -> int:
    from qex.platform import collector

    if argv == ["--forkserver"]:
        # Never held here (why: `qex.platform.collector`); a server forked from a starting
        # coordinator inherits its hold and ends it before its own imports.
        collector.release(freeze=False)
        from qex.platform import chaintrace

        chaintrace.mark("fs.process", "-")
        from qex.supervisor.forkserver import serve

        return serve()
    # A supervisor releases the collector before its job (or hook) runs, a standby before it
    # waits for its job (`qex.platform.collector`).
    collector.hold()
    if argv == ["--standby"]:
        from qex.supervisor.standby import serve as serve_standby

        return serve_standby()
    from qex.supervisor.main import main

    return main(argv)


if __name__ == "__main__":
    sys.exit(entry(sys.argv[1:]))
