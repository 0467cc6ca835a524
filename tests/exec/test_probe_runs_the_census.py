"""The sandbox probes start what every command needs: the census wrapper's `sh` and the
`bash` it runs. They ran `true` (bwrap) or `bash -c true` (gVisor), so a PATH whose
folders held bash and true but no sh passed the probe and then failed every command."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap
from lathe.exec.gvisor import check_gvisor

_BWRAP = shutil.which("bwrap")
_RUNSC = shutil.which("runsc")


def _path_without_sh(tmp_path: Path) -> str:
    tools = tmp_path / "tools"  # bound in the sandbox, as every PATH folder is
    tools.mkdir()
    for program in ("bash", "true", "env"):
        (tools / program).symlink_to(shutil.which(program))
    return str(tools)


@needs(check_bubblewrap(), "bubblewrap")
def test_bwrap_without_sh_is_reported_by_the_probe(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", _path_without_sh(tmp_path))

    status = check_bubblewrap(str(_BWRAP))

    assert status.available is False
    assert "execvp sh" in status.message and "PATH" in status.message


@needs(check_gvisor(), "gVisor")
def test_gvisor_without_sh_is_reported_by_the_probe(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", _path_without_sh(tmp_path))

    status = check_gvisor(str(_RUNSC))

    assert status.available is False
    assert 'executable "sh"' in status.message and "folders of PATH" in status.message
    assert "needs root" not in status.message
