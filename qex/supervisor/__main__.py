"""`python -m qex.supervisor <job_id>`: the process that runs one job (`qex.supervisor.main`),
or `python -m qex.supervisor --forkserver`: the fork server (`qex.supervisor.forkserver`).

The choice is made here, so `main` and `forkserver` do not import each other.
"""

from __future__ import annotations

import sys


def entry(argv: list[str]) -> int:
    if argv == ["--forkserver"]:
        from qex.platform import chaintrace

        chaintrace.mark("fs.process", "-")
        from qex.supervisor.forkserver import serve

        return serve()
    from qex.supervisor.main import main

    return main(argv)


if __name__ == "__main__":
    sys.exit(entry(sys.argv[1:]))
