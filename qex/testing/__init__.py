"""Test doubles shipped with qex: nothing in the normal run path imports this package.

* `fakes`: cgroupfs and systemd user-manager fakes for the enforcement unit tests.
* `scripted_sandbox`: a sandbox whose evidence comes from a JSON file named by the
  environment variable `QEX_TEST_SANDBOX`, for end-to-end tests of OOM handling.
"""
