"""The fault suite's fixtures live in faultkit.py (a unique module name: every test
directory has a conftest.py, and the test files import the helpers by name)."""

from faultkit import fault_env, small_disk

__all__ = ["fault_env", "small_disk"]
