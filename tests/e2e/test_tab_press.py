"""A Tab press through the real program: the fast answer (`qex.cli.fastcomplete`) prints what
click prints for the same call back of each shell's script, byte for byte, exit code too."""

from __future__ import annotations

import pytest
from conftest import Env

#: (shell, COMP_WORDS, COMP_CWORD) as each script sets them; fish puts the word under the
#: cursor in COMP_CWORD.
CALLS = [
    ("bash", "qex ", "1"), ("bash", "qex st", "1"), ("bash", "qex status ", "2"),
    ("bash", "qex submit --c", "2"), ("bash", "qex completion ", "2"),
    ("bash", "qex pause queue --", "3"), ("bash", "qex systemd export ", "3"),
    ("zsh", "qex submit --", "2"), ("zsh", "qex wait ", "2"), ("zsh", "qex help e", "2"),
    ("fish", "qex st", "st"), ("fish", "qex logs --", "--"), ("fish", "qex kill ", ""),
    ("zsh", "qex submit --cpu=2 --", "3"), ("zsh", "qex list --state=r", "2"),
    ("fish", "qex logs -fC 2 ", ""), ("bash", "qex list --state = ", "4"),
    ("zsh", "qex submit --name 'my job' --", "4"), ("fish", 'qex logs "tab', '"tab'),
    ("bash", "qex pipeline ", "2"), ("zsh", "qex submit --cwd /", "3"),
    ("bash", "qex 'st", "1"), ("bash", "qex status --nope ", "2"),
]


@pytest.mark.parametrize(("shell", "words", "cword"), CALLS)
def test_the_fast_answer_is_clicks(qex_env: Env, shell: str, words: str, cword: str) -> None:
    job = qex_env.submit("--name", "tabbed", "--", "true")  # its id and name complete
    assert qex_env.run("wait", job, timeout=60).returncode == 0  # the same job both times
    call = {"_QEX_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
    fast = qex_env.run(extra_env=call, timeout=60)
    slow = qex_env.run(extra_env={**call, "QEX_NO_FAST_PATH": "1"}, timeout=60)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout,
                                                          slow.stderr)
    assert fast.returncode == 0
