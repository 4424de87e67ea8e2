"""`python -m qex.supervisor <job_id>`: the process that runs one job (`qex.supervisor.main`)."""

from __future__ import annotations

import sys

from qex.supervisor.main import main

if __name__ == "__main__":
    sys.exit(main())
