"""Settings shared by every test directory.

Hypothesis times its own input generation and each example. On a shared two-core machine
(or a CI runner that is also booting a guest) those clocks say more about the neighbours
than about the code, so the default profile turns the time-based checks off. The
properties themselves, and the number of examples, are unchanged.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "qex",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("qex")
