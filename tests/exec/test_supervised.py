"""`supervised`: a long-lived process under the supervisor keeps the environment given."""

from __future__ import annotations

import os
import subprocess

from lathe.exec.supervision import supervised


def test_the_command_keeps_the_lc_ctype_and_the_rest_of_its_environment() -> None:
    # The supervisor drops the LC_CTYPE its own interpreter may coerce: an MCP server's
    # own setting went with it.
    env = {"PATH": os.environ["PATH"], "LC_CTYPE": "C.UTF-8", "FOO": "1"}
    argv = supervised(["/bin/sh", "-c", "echo [$LC_CTYPE] [$FOO]"], lc_ctype="C.UTF-8")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "[C.UTF-8] [1]", done.stderr
