"""The stop hook of a job that the coordinator stops is read from the config in force NOW.

The coordinator takes a changed config file only once it has settled; a hook written just
before a job ends must run all the same. Here the file keeps changing (a comment line is
added every 50 ms, the hook always present), so the coordinator's own values never take it:
only a fresh read at the moment the job stops can see the hook.
"""

from __future__ import annotations

import os
import threading

from conftest import Env


def test_a_hook_written_just_before_a_cancel_runs(qex_env: Env) -> None:
    heard = qex_env.root / "heard"
    qex_env.run("pause", "queue", check=True)
    job = qex_env.submit("--", "true")
    hook = (f'[hooks]\non_stop = ["sh", "-c", "echo $QEX_STATE >> {heard}"]\n'
            'on_stop_states = ["cancelled"]\n')
    stop = threading.Event()

    def keep_changing() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            # Atomic, as docs/config.md asks: a reader never sees half a file.
            tmp = qex_env.config.with_suffix(".tmp")
            tmp.write_text(hook + "".join(f"# {i}\n" for i in range(n % 7)))
            os.replace(tmp, qex_env.config)
            stop.wait(0.05)

    writer = threading.Thread(target=keep_changing)
    qex_env.write_config(hook)
    writer.start()
    try:
        assert qex_env.run("cancel", job).returncode == 0
        qex_env.wait_for(lambda: heard.exists() and "cancelled" in heard.read_text(),
                         timeout=30, what="the stop hook to run")
    finally:
        stop.set()
        writer.join()
    qex_env.run("resume", "queue", check=True)
