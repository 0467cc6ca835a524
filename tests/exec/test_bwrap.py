"""The sandboxes, with the real bwrap and the real runsc, and real processes (issue 5,
section 3; issue 17, item 7): one matrix of what a sandboxed command may and may not do,
run against each sandbox lathe offers."""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.sandboxes import needs

from lathe.exec.base import ExecResult, Executor, ExecutorUnavailable
from lathe.exec.bwrap import BubblewrapExecutor, check_bubblewrap
from lathe.exec.gvisor import GvisorExecutor, check_gvisor

_STATUS = check_bubblewrap()
needs_bwrap = needs(_STATUS, "bubblewrap")
_GVISOR = check_gvisor()
needs_gvisor = needs(_GVISOR, "gVisor")

Sandbox = Callable[..., Executor]


@pytest.fixture(
    params=[
        pytest.param(BubblewrapExecutor, marks=needs_bwrap, id="bubblewrap"),
        pytest.param(GvisorExecutor, marks=needs_gvisor, id="gvisor"),
    ]
)
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    """The executor class of one sandbox; each takes the same arguments."""
    return request.param


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".env").write_text("API_KEY=hunter2\n")
    (root / "notes.txt").write_text("public\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "token").write_text("s3cret\n")
    return root


async def _run(executor: Executor, command: str, cwd: Path, **kw: float) -> ExecResult:
    return await executor.run(
        command,
        cwd=cwd,
        timeout=kw.get("timeout", 30.0),
        max_output_bytes=64_000,
        spill_dir=cwd.parent / "spill",
    )


async def test_the_workspace_is_writable(sandbox: Sandbox, workspace: Path) -> None:
    result = await _run(sandbox(workspace), "mkdir -p out && echo built > out/a", workspace)
    assert result.exit_code == 0, result.output
    assert (workspace / "out" / "a").read_text() == "built\n"


async def test_writes_outside_the_workspace_fail(sandbox: Sandbox, workspace: Path) -> None:
    in_home = Path.home() / f"lathe-sandbox-{uuid.uuid4().hex}"
    in_etc = Path("/etc") / f"lathe-sandbox-{uuid.uuid4().hex}"
    try:
        for target in (in_home, in_etc):
            result = await _run(sandbox(workspace), f"echo x > {target}", workspace)
            assert result.exit_code != 0
            assert "Read-only file system" in result.output
            assert not target.exists()
    finally:
        for target in (in_home, in_etc):
            target.unlink(missing_ok=True)


async def test_a_write_beside_the_workspace_never_reaches_the_host(
    sandbox: Sandbox, workspace: Path
) -> None:
    # The workspace here lives under /tmp, which is the sandbox's private tmpfs.
    beside = workspace.parent / "beside.txt"
    result = await _run(sandbox(workspace), f"echo x > {beside}", workspace)
    assert result.exit_code in (0, 1)
    assert not beside.exists()


async def test_tmp_is_private(sandbox: Sandbox, workspace: Path) -> None:
    name = f"/tmp/lathe-sandbox-{uuid.uuid4().hex}"
    result = await _run(sandbox(workspace), f"echo x > {name} && cat {name}", workspace)
    assert (result.exit_code, result.output) == (0, "x\n")
    assert not Path(name).exists()


@pytest.fixture
def listening_port() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def _connect(port: int) -> str:
    return (
        "python3 -c 'import socket; "
        f'socket.create_connection(("127.0.0.1", {port}), timeout=3); print("connected")\''
    )


async def test_the_network_is_unreachable(
    sandbox: Sandbox, workspace: Path, listening_port: int
) -> None:
    result = await _run(sandbox(workspace), _connect(listening_port), workspace)
    assert result.exit_code != 0
    assert "connected" not in result.output
    assert "Connection refused" in result.output or "unreachable" in result.output


async def test_network_true_shares_the_hosts_network(
    sandbox: Sandbox, workspace: Path, listening_port: int
) -> None:
    executor = sandbox(workspace, network=True)
    result = await _run(executor, _connect(listening_port), workspace)
    assert (result.exit_code, result.output) == (0, "connected\n")


async def test_denied_paths_are_masked_and_neighbours_readable(
    sandbox: Sandbox, workspace: Path
) -> None:
    executor = sandbox(workspace, deny_read=[".env", "secrets/**"])
    masked = await _run(executor, "cat .env", workspace)
    assert masked.exit_code != 0
    assert "hunter2" not in masked.output
    assert "Permission denied" in masked.output
    in_dir = await _run(executor, "cat secrets/token; ls secrets", workspace)
    assert in_dir.exit_code != 0
    assert "s3cret" not in in_dir.output and "token" not in in_dir.output.replace(
        "secrets/token", ""
    )
    neighbour = await _run(executor, "cat notes.txt", workspace)
    assert (neighbour.exit_code, neighbour.output) == (0, "public\n")
    overwrite = await _run(executor, "echo leaked > .env", workspace)
    assert overwrite.exit_code != 0
    assert (workspace / ".env").read_text() == "API_KEY=hunter2\n"


async def test_paths_denied_for_editing_are_read_only_and_readable(
    sandbox: Sandbox, workspace: Path
) -> None:
    executor = sandbox(workspace, deny_write=["secrets/**", "notes.txt"])
    readable = await _run(executor, "cat notes.txt secrets/token", workspace)
    assert (readable.exit_code, readable.output) == (0, "public\ns3cret\n")
    changes = [
        "echo x > notes.txt",
        "sed -i s/s3cret/gone/ secrets/token",
        "rm secrets/token",
        "touch secrets/new",
        "mv secrets moved",
    ]
    for command in changes:
        result = await _run(executor, command, workspace)
        assert result.exit_code != 0, command
    assert (workspace / "notes.txt").read_text() == "public\n"
    assert sorted(p.name for p in (workspace / "secrets").iterdir()) == ["token"]
    assert (workspace / "secrets" / "token").read_text() == "s3cret\n"
    other = await _run(executor, "echo ok > other.txt && cat other.txt", workspace)
    assert (other.exit_code, other.output) == (0, "ok\n")


async def test_dot_git_is_read_only_unless_allowed(sandbox: Sandbox, workspace: Path) -> None:
    result = await _run(sandbox(workspace), "echo x > .git/config", workspace)
    assert result.exit_code != 0
    assert "Read-only file system" in result.output
    assert not (workspace / ".git" / "config").exists()
    allowed = await _run(sandbox(workspace, read_only=()), "echo x > .git/config", workspace)
    assert allowed.exit_code == 0
    assert (workspace / ".git" / "config").read_text() == "x\n"


async def test_python_and_git_work_inside(sandbox: Sandbox, workspace: Path) -> None:
    command = "python3 -c 'print(6 * 7)' && git --version >/dev/null && echo ok"
    result = await _run(sandbox(workspace), command, workspace / "secrets")
    assert (result.exit_code, result.output) == (0, "42\nok\n")


async def test_runs_in_a_new_pid_namespace(sandbox: Sandbox, workspace: Path) -> None:
    result = await _run(sandbox(workspace), "echo $$", workspace)
    assert result.exit_code == 0
    assert int(result.output) < 10  # bwrap is pid 1 inside; the host's pids are not visible


async def test_a_timeout_kills_the_whole_process_tree(sandbox: Sandbox, workspace: Path) -> None:
    marker = f"lathe-sbx-{uuid.uuid4().hex}"
    command = f"bash -c 'exec -a {marker} sleep 300' & (exec -a {marker} sleep 300)"
    result = await _run(sandbox(workspace), command, workspace, timeout=1.5)
    assert result.timed_out and result.exit_code is None
    assert result.duration_s < 15
    assert _processes_named(marker) == []


async def test_background_jobs_end_with_the_command(sandbox: Sandbox, workspace: Path) -> None:
    # What the unsandboxed executor's supervisor does too: nothing outlives the command.
    marker = f"lathe-sbx-{uuid.uuid4().hex}"
    command = (
        f"(exec -a {marker} sleep 300) > /dev/null 2>&1 & "
        f"setsid bash -c 'exec -a {marker} sleep 300' > /dev/null 2>&1 & "
        f"nohup bash -c 'exec -a {marker} sleep 300' > /dev/null 2>&1 & echo started"
    )
    result = await _run(sandbox(workspace), command, workspace)
    assert result.exit_code == 0 and result.output.startswith("started\n")
    assert "[lathe: the command exited but left" in result.output  # and says so
    # The kernel SIGKILLs the namespace as its init exits; the last may take a moment
    # (seconds on a busy machine).
    deadline = time.monotonic() + 10
    while _processes_named(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert _processes_named(marker) == []


def _processes_named(marker: str) -> list[int]:
    """Host processes whose command line holds `marker`, and runsc processes whose
    bundle is gone: under gVisor the command's processes live inside the sandbox, which
    is itself a runsc process, and its bundle folder goes once the command has ended."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit():
                continue
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        bundles = [a.split(b"=", 1)[1] for a in arguments if a.startswith(b"--bundle=")]
        orphaned = any(not Path(os.fsdecode(b)).exists() for b in bundles)
        if orphaned or any(marker.encode() in a for a in arguments):
            found.append(int(entry.name))
    return found


def test_probe_explains_a_missing_bwrap() -> None:
    status = check_bubblewrap("/nonexistent/lathe/bwrap")
    assert status.available is False
    assert "not installed" in status.message
    assert "apt-get install bubblewrap" in status.message


async def test_run_refuses_instead_of_running_unsandboxed(workspace: Path) -> None:
    executor = BubblewrapExecutor(workspace, bwrap="/nonexistent/lathe/bwrap")
    with pytest.raises(ExecutorUnavailable, match="apt-get install bubblewrap"):
        await _run(executor, "echo ran > ran.txt", workspace)
    assert not (workspace / "ran.txt").exists()


def test_probe_explains_a_bwrap_that_cannot_create_namespaces(tmp_path: Path) -> None:
    # A stand-in for a bwrap blocked by the kernel or AppArmor, with bwrap's own message.
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the"
        " kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    status = check_bubblewrap(str(fake))
    assert status.available is False
    assert "No permissions to creating new namespace" in status.message
    assert "kernel.unprivileged_userns_clone=1" in status.message
    assert "apparmor_restrict_unprivileged_userns=0" in status.message


async def test_a_virtualenv_under_tmp_stays_visible_in_the_sandbox(
    sandbox: Sandbox, tmp_path: Path, monkeypatch
) -> None:
    # CI may keep its Python anywhere, /tmp included; the private /tmp must not hide it.
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:{os.environ['PATH']}")
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = await _run(
        sandbox(workspace),
        "python -c 'import sys; print(sys.prefix)' && python -m pytest --version",
        workspace,
    )

    assert result.exit_code == 0, result.output
    assert str(venv) in result.output


async def test_symlinks_under_denied_or_read_only_names_neither_leak_nor_break_the_sandbox(
    sandbox: Sandbox,
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "real-secret.txt").write_text("TOP SECRET\n")
    (ws / ".env").symlink_to("real-secret.txt")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / ".lathe").symlink_to(outside)  # as a repository could ship it
    executor = sandbox(ws, deny_read=[".env"], deny_write=[".lathe/"])

    result = await executor.run(
        "cat .env; echo; echo ran", cwd=ws, timeout=30, max_output_bytes=10_000,
        spill_dir=tmp_path / "spill",
    )  # fmt: skip

    assert "ran" in result.output, result.output
    assert "TOP SECRET" not in result.output


def test_probe_explains_a_missing_runsc() -> None:
    status = check_gvisor("/nonexistent/lathe/runsc")
    assert status.available is False
    assert "not installed" in status.message
    assert "apt-get install runsc" in status.message
    assert "--sandbox bubblewrap" in status.message


async def test_gvisor_refuses_instead_of_running_unsandboxed(workspace: Path) -> None:
    executor = GvisorExecutor(workspace, runsc="/nonexistent/lathe/runsc")
    with pytest.raises(ExecutorUnavailable, match="apt-get install runsc"):
        await _run(executor, "echo ran > ran.txt", workspace)
    assert not (workspace / "ran.txt").exists()


def test_probe_explains_a_runsc_that_cannot_start_a_sandbox(tmp_path: Path) -> None:
    # A stand-in for a runsc refused by the machine, with a message of runsc's own kind.
    fake = tmp_path / "runsc"
    fake.write_text(
        "#!/bin/sh\necho 'running container: creating container: cannot create sandbox: "
        "operation not permitted' >&2\nexit 128\n"
    )
    fake.chmod(0o755)
    status = check_gvisor(str(fake))
    assert status.available is False
    assert "operation not permitted" in status.message
    assert "runsc needs root" in status.message


async def test_what_a_command_creates_under_an_edit_denied_name_is_moved_aside(
    sandbox: Sandbox, workspace: Path
) -> None:
    executor = sandbox(workspace, deny_write=["generated.cfg"])
    result = await _run(executor, "echo made > generated.cfg && echo ok", workspace)
    assert result.output.startswith("ok\n")
    assert "generated.cfg" in result.output and "moved it to" in result.output
    assert not (workspace / "generated.cfg").exists()
    moved = list((workspace.parent / "spill" / "set-aside").rglob("generated.cfg"))
    assert [p.read_text() for p in moved] == ["made\n"]


async def test_lathes_data_dir_under_a_tool_folder_is_covered_but_the_workspace_shows(
    sandbox: Sandbox, tmp_path: Path, monkeypatch
) -> None:
    # The default data dir is ~/.local/share/lathe, under a tool folder every command
    # sees: other sessions and subagents' worktrees must not show through it.
    tools = tmp_path / "tools"
    data = tools / "share" / "lathe"
    secret = data / "worktrees" / "other-child" / ".env"
    secret.parent.mkdir(parents=True)
    secret.write_text("API_KEY=hunter2\n")
    ws = data / "worktrees" / "this-child"
    ws.mkdir()
    (ws / "mine.txt").write_text("mine\n")
    monkeypatch.setenv("LATHE_HOME", str(data))
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")

    result = await _run(sandbox(ws), f"cat mine.txt; cat {secret}; ls {data}", ws)

    assert "mine" in result.output
    assert "hunter2" not in result.output
    assert "No such file or directory" in result.output


def test_a_relative_or_home_path_entry_never_shows_the_home_folder(tmp_path, monkeypatch):
    # `PATH=.:$PATH` with lathe started from ~ bound all of home (~/.ssh with it).
    from lathe.exec.view import tool_paths

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.chdir(home)
    monkeypatch.setenv("PATH", f".:{home}:{os.environ['PATH']}")

    shown = tool_paths(home)

    assert not any(home.is_relative_to(path) for path in shown), shown


def test_only_the_tool_folders_of_dot_local_are_shown(tmp_path, monkeypatch):
    # ~/.local/share and ~/.local/state hold keyrings and shell histories.
    from lathe.exec.view import tool_paths

    home = tmp_path / "home"
    for name in ("bin", "lib", "share/python_keyring", "state"):
        (home / ".local" / name).mkdir(parents=True)

    shown = tool_paths(home)

    assert home / ".local" / "bin" in shown and home / ".local" / "lib" in shown
    assert not any((home / ".local" / "share").is_relative_to(p) for p in shown), shown
    assert not any((home / ".local" / "state").is_relative_to(p) for p in shown), shown


async def test_a_version_managers_shims_run_in_the_sandbox(
    sandbox: Sandbox, workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    # pyenv, rbenv, asdf: `shims/python` runs `../libexec/pyenv`, which runs
    # `../versions/X/bin/python`; only shims/ was shown, so every check exited 127.
    root = tmp_path / "manager"
    for folder in ("shims", "libexec", "versions/1.0/bin"):
        (root / folder).mkdir(parents=True)
    real = root / "versions" / "1.0" / "bin" / "tool"
    real.write_text("#!/bin/sh\necho real tool ran\n")
    dispatch = root / "libexec" / "manager"
    dispatch.write_text(f"#!/bin/sh\nexec {real}\n")
    shim = root / "shims" / "tool"
    shim.write_text(f"#!/bin/sh\nexec {dispatch}\n")
    for script in (real, dispatch, shim):
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{root / 'shims'}:{os.environ['PATH']}")

    result = await _run(sandbox(workspace), "tool", workspace)

    assert result.exit_code == 0, result.output
    assert "real tool ran" in result.output
