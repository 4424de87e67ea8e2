"""Test doubles shipped with qex; nothing imports them unless a test asks for them.

* `fakes`: cgroupfs and systemd user-manager fakes for the enforcement unit tests.
* `scripted_sandbox`: a sandbox whose evidence comes from a JSON file named by the
  environment variable `QEX_TEST_SANDBOX`, for end-to-end tests of OOM handling.
"""
