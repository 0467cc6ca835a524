"""A user file named by LATHE_CONFIG that is not there stops lathe, as a folder does.

Reported against main: `LATHE_CONFIG=/path/typo.toml lathe run ...` ran with no user
config and no notice — the deny rules of the real file dropped with it — and `lathe
config show` said `(not found)` and went on. `lathe config init` must still create the
file the variable names.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Reply


def lathe(*args: str, cwd: Path, config: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env |= {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(cwd / "home")}
    env["LATHE_CONFIG"] = str(config)
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_run_with_a_mistyped_config_path_stops_before_the_model_is_asked(tmp_path, fake_openai):
    (tmp_path / "config.toml").write_text('[permissions]\ndeny = ["read(.env)"]\n')
    typo = tmp_path / "confg.toml"
    fake_openai.responder = lambda request: Reply("Hello.")

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "hi",
        cwd=tmp_path, config=typo,
    )  # fmt: skip

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lathe: LATHE_CONFIG names {typo}, which does not exist; fix the path, create the "
        "file (`lathe config init` writes a starter one there), or set LATHE_CONFIG=/dev/null "
        "for no user file"
    ]
    assert fake_openai.chat_bodies() == []


def test_config_show_refuses_it_and_config_init_creates_it(tmp_path):
    user = tmp_path / "new" / "config.toml"

    shown = lathe("config", "show", cwd=tmp_path, config=user)
    assert (shown.returncode, shown.stdout) == (2, "")
    assert shown.stderr.startswith(f"lathe: LATHE_CONFIG names {user}, which does not exist")

    located = lathe("config", "path", cwd=tmp_path, config=user)
    assert located.returncode == 0
    assert f"user file:    {user}  (not found)" in located.stdout

    written = lathe("config", "init", cwd=tmp_path, config=user)
    assert (written.returncode, written.stdout) == (0, f"wrote {user}\n")
    assert lathe("config", "show", cwd=tmp_path, config=user).returncode == 0


def test_dev_null_is_shown_as_no_user_file(tmp_path):
    # It read "(not found)", the words for a typo, for the one way of asking for none.
    shown = lathe("config", "show", cwd=tmp_path, config=Path(os.devnull))
    located = lathe("config", "path", cwd=tmp_path, config=Path(os.devnull))

    assert shown.returncode == 0 and located.returncode == 0, shown.stderr + located.stderr
    assert "# user file: /dev/null  (none: LATHE_CONFIG=/dev/null)" in shown.stdout
    assert "user file:    /dev/null  (none: LATHE_CONFIG=/dev/null)" in located.stdout
