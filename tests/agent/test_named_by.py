"""The files a verify command names are read from the folder the shell is in where it
names them (`check_files.named_by`), as lathe's guard parses the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.agent.check_files import named_by


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("sh ci/check.sh", ["ci/check.sh"]),
        ("cd ci && sh check.sh", ["ci/check.sh"]),
        ("sh -c 'sh ci/check.sh'", ["ci/check.sh"]),
        ("bash -c 'cd ci; ./check.sh' 2>&1", ["ci/check.sh"]),
        ("make test", ["Makefile"]),
        ("make -C sub test", ["sub/Makefile"]),
        ("make --directory=sub -k test", ["sub/Makefile"]),
        ("cd sub && make", ["sub/Makefile"]),
        # Outside the workspace, or a folder: nothing.
        ("sh ../check.sh && pytest ci", []),
    ],
)
def test_the_files_a_command_names_are_found_where_it_runs(tmp_path: Path, command, named):
    ws = tmp_path / "ws"
    (ws / "ci").mkdir(parents=True)
    (ws / "sub").mkdir()
    (ws / "ci" / "check.sh").write_text("#!/bin/sh\ntrue\n")
    (ws / "Makefile").write_text("test:\n\ttrue\n")
    (ws / "sub" / "Makefile").write_text("test:\n\ttrue\n")
    (tmp_path / "check.sh").write_text("true\n")
    assert named_by(command, ws) == named
