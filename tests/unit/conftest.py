"""Settings for the unit tests.

Hypothesis' health check for slow data generation measures wall time, and a loaded build
machine (a distribution package build, CI runners sharing two cores) trips it although
nothing in qex is wrong. The property tests keep their example counts; only that timing
check and the per-example deadline are off.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("qex-unit", suppress_health_check=[HealthCheck.too_slow],
                          deadline=None)
settings.load_profile("qex-unit")
