"""Settings shared by every test directory.

Hypothesis times its own input generation and each example. On a shared two-core machine,
a CI runner that is also booting a guest, or a distribution's package build, those clocks
say more about the neighbours than about the code, so the profile turns the time-based
checks off. The properties themselves, and the number of examples, are unchanged.

The systemd guest of tests/vm installs no hypothesis, so the profile is only set where it is
installed.

A runner in the background of a shell script (or `nohup`) starts the tests with SIGINT
ignored, and every `qex` they start would inherit that; qex keeps a signal it was started
with ignored, so the tests that press Ctrl-C on a wait would see nothing. The tests start
with the default action instead (a Python handler becomes the default across `exec`).
"""

import signal

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # tests/vm in the guest
    pass
else:
    settings.register_profile(
        "qex", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("qex")
