"""The container sandbox (issue 17, item 8): the command lines lathe builds, held to a
contract everywhere, and a real container where an engine works here.

On these machines docker has no daemon, and podman's default runtime (crun) may not set
the rlimits it wants inside an unprivileged container; podman with gVisor's runsc as its
runtime works. The real-engine tests use that and say exactly why when it does not."""

from __future__ import annotations

import contextlib
import csv
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.e2e.test_calculator import run_against
from tests.e2e.test_calculator import workspace as calculator
from tests.fakes.openai_server import Call, Hang, Reply
from tests.sandboxes import needs
from tests.tools.helpers import process_alive
from tests.waiting import while_running

from lathe.exec.base import ExecutorUnavailable
from lathe.exec.container import (
    ContainerExecutor,
    ContainerSpec,
    check_container,
    container_argv,
    exec_argv,
)
from lathe.exec.view import sandbox_view, unreadable_file

RUNSC = ("--runtime", "runsc", "--runtime-flag", "ignore-cgroups")
PODMAN = ContainerSpec(
    engine="podman", rootfs="/", engine_args=(*RUNSC, "--runtime-flag", "network=none")
)
_STATUS = check_container(PODMAN)
needs_podman = needs(_STATUS, "podman with runsc")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".env").write_text("API_KEY=hunter2\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "token").write_text("s3cret\n")
    (root / "notes.txt").write_text("public\n")
    return root


def test_the_container_shows_the_view_the_other_sandboxes_show(ws: Path) -> None:
    view = sandbox_view(ws, ws, network=False, deny_read=[".env", "secrets/"])
    argv = container_argv(ContainerSpec(image="python:3.12"), "lathe-x", view)

    assert argv[:6] == ["docker", "run", "--interactive", "--rm", "--name", "lathe-x"]
    assert argv[argv.index("--network") + 1] == "none"
    assert {"--cap-drop", "ALL", "no-new-privileges"} <= set(argv)
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    mounts = _mounts(argv)
    assert _bind(ws, ws) in mounts
    assert _bind(ws / ".git", ws / ".git", "ro") in mounts  # read-only, as in bwrap
    assert _bind(unreadable_file(), ws / ".env", "ro") in mounts  # a masked file
    masked_folder = ["type=tmpfs", f"destination={ws / 'secrets'}", "tmpfs-mode=000", "ro"]
    assert masked_folder in mounts
    assert argv[argv.index("--tmpfs") + 1] == "/tmp"
    assert argv[-4] == "python:3.12"  # the image, then the keeper
    with_network = container_argv(
        ContainerSpec(engine="podman", rootfs="/srv/root"), "n", sandbox_view(ws, ws, network=True)
    )
    assert with_network[with_network.index("--network") + 1] == "host"
    assert with_network[-5:-3] == ["--rootfs", "/srv/root:O"]  # an overlay: root untouched


def _mounts(argv: list[str]) -> list[list[str]]:
    """The fields of each `--mount`, read as the engines read them: as a CSV line."""
    return [next(csv.reader([argv[i + 1]])) for i, a in enumerate(argv) if a == "--mount"]


def _bind(source: Path, destination: Path, *options: str) -> list[str]:
    return ["type=bind", f"source={source}", f"destination={destination}", *options]


def test_paths_with_colons_commas_and_quotes_are_passed_whole(tmp_path: Path) -> None:
    # `--volume SRC:DST:ro` split a path on its colons: "incorrect volume format".
    ws = tmp_path / 'w:s,"1"'
    (ws / 'a:b,"c".pem').parent.mkdir(parents=True)
    (ws / 'a:b,"c".pem').write_text("key\n")
    (ws / "k:e,ys").mkdir()
    view = sandbox_view(ws, ws, network=False, read_only=(), deny_read=["*.pem", "k:e,ys/"])

    mounts = _mounts(container_argv(ContainerSpec(image="img"), "lathe-x", view))

    assert _bind(ws, ws) in mounts
    assert _bind(unreadable_file(), ws / 'a:b,"c".pem', "ro") in mounts
    assert ["type=tmpfs", f"destination={ws / 'k:e,ys'}", "tmpfs-mode=000", "ro"] in mounts


def test_a_command_runs_by_exec_with_only_the_given_environment(ws: Path) -> None:
    spec = ContainerSpec(engine="podman", image="img", engine_args=("--runtime", "runsc"))
    argv = exec_argv(spec, "lathe-x", "pytest -q", ws / "src", {"NO_COLOR": "1"})
    assert argv == [
        "podman", "--runtime", "runsc", "exec", "--workdir", str(ws / "src"),
        "--env", "NO_COLOR=1", "lathe-x", "bash", "-c", "pytest -q",
    ]  # fmt: skip


def test_a_spec_that_cannot_work_is_refused_with_the_fix(monkeypatch) -> None:
    assert "exactly one" in (ContainerSpec().problem() or "")
    assert "needs podman" in (ContainerSpec(rootfs="/").problem() or "")
    assert "neither docker nor podman" in (ContainerSpec(engine="lxc", image="i").problem() or "")
    monkeypatch.setenv("PATH", "/nonexistent")
    missing = check_container(ContainerSpec(engine="podman", image="img"))
    assert not missing.available
    assert "podman is not installed" in missing.message
    assert "apt-get install podman" in missing.message


async def test_run_refuses_instead_of_running_elsewhere(ws: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    executor = ContainerExecutor(ws, ContainerSpec(engine="docker", image="img"))
    with pytest.raises(ExecutorUnavailable, match="docker is not installed"):
        await executor.run("touch ran", cwd=ws, timeout=10, max_output_bytes=1000,
                           spill_dir=ws.parent / "spill")  # fmt: skip
    assert not (ws / "ran").exists()


async def test_a_start_that_timed_out_is_removed_before_the_next_try(
    ws: Path, tmp_path: Path, monkeypatch
) -> None:
    # The engine's client of a start that timed out (a slow pull) kept running, and the
    # next command started a second one under the same name: "Conflict".
    from lathe.exec import container

    log, bin_dir = tmp_path / "engine.log", tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$1" >> {log}\n'
        'case "$*" in *" true") exit 0;; esac\n'  # the probe
        '[ "$1" = run ] && exec sleep 300\n'  # a keeper that never says it is ready
        "exit 0\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(container, "_START_TIMEOUT_S", 1.0)
    executor = ContainerExecutor(ws, ContainerSpec(engine="docker", image="img"))
    try:
        for _ in range(2):
            with pytest.raises(ExecutorUnavailable, match="did not start"):
                await _run(executor, "true", ws)
    finally:
        await executor.aclose()
    calls = log.read_text().split()
    keepers = [i for i, call in enumerate(calls) if call == "run"][1:]  # the probe first
    assert len(keepers) == 2 and "rm" in calls[keepers[0] : keepers[1]], calls


async def _run(executor: ContainerExecutor, command: str, cwd: Path, timeout: float = 60):
    return await executor.run(
        command, cwd=cwd, timeout=timeout, max_output_bytes=64_000, spill_dir=cwd.parent / "sp"
    )


def _containers(name: str, by: str = "name") -> str:
    listed = subprocess.run(
        ["podman", "ps", "--all", "--filter", f"{by}={name}", "--format", "{{.Names}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return listed.stdout.strip()


@needs_podman
async def test_a_real_container_holds_the_sandbox_rules(ws: Path) -> None:
    executor = ContainerExecutor(ws, PODMAN, deny_read=[".env", "secrets/"])
    outside = Path("/etc") / f"lathe-container-{uuid.uuid4().hex}"
    try:
        wrote = await _run(executor, "echo built > out.txt && cat notes.txt", ws)
        masked = await _run(executor, "cat .env; cat secrets/token; echo done", ws)
        git = await _run(executor, "echo x > .git/config", ws)
        await _run(executor, f"echo x > {outside}", ws)
        offline = await _run(
            executor,
            "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=3)'",
            ws,
        )
        assert _containers(executor.name) == executor.name  # one container, kept between
    finally:
        await executor.aclose()

    assert (wrote.exit_code, wrote.output) == (0, "public\n")
    assert (ws / "out.txt").read_text() == "built\n"  # the workspace is the host's folder
    assert "hunter2" not in masked.output and "s3cret" not in masked.output
    assert masked.output.count("Permission denied") == 2
    assert git.exit_code != 0 and not (ws / ".git" / "config").exists()
    assert not outside.exists()  # the container's root is its own
    assert offline.exit_code != 0
    deadline = time.monotonic() + 10
    while _containers(executor.name) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _containers(executor.name) == ""  # removed at the end


@needs_podman
async def test_nothing_a_command_starts_outlives_it_in_the_container(ws: Path) -> None:
    executor = ContainerExecutor(ws, PODMAN)
    try:
        background = await _run(executor, "sleep 300 & (sleep 300 &); echo started", ws)
        timed_out = await _run(executor, "sleep 300", ws, timeout=1.5)
        left = await _run(executor, "ps -eo args | grep -c '^sleep 300' || true", ws)
    finally:
        await executor.aclose()

    assert (background.exit_code, background.output) == (0, "started\n")
    assert timed_out.timed_out and timed_out.exit_code is None
    assert left.output.strip() == "0"


@needs_podman
def test_lathe_run_with_the_container_sandbox(tmp_path, fake_openai) -> None:
    ws = calculator(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "cat /proc/1/cmdline"})]),
        Reply("done"),
    )
    engine_args = ", ".join(f'"{a}"' for a in PODMAN.engine_args)

    result = run_against(
        fake_openai, ws, tmp_path, "--sandbox", "container",
        "-c", "container.engine=podman", "-c", "container.rootfs=/",
        "-c", f"container.engine_args=[{engine_args}]", "look",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-3000:]
    tool = next(m for m in fake_openai.chat_bodies()[1]["messages"] if m["role"] == "tool")
    assert "lathe-keeper-ready" in tool["content"]  # pid 1 is the container's keeper
    mounted = subprocess.run(  # by this run: other tests' containers may run meanwhile
        ["podman", "ps", "--all", "--format", "{{.Mounts}}"], capture_output=True, text=True
    )
    assert str(ws) not in mounted.stdout


@needs_podman
async def test_a_path_denied_after_the_container_started_is_masked_all_the_same(ws: Path) -> None:
    executor = ContainerExecutor(ws, PODMAN, deny_read=["late.env"])
    try:
        first = await _run(executor, "echo ok", ws)
        (ws / "late.env").write_text("TOKEN=late-secret\n")  # created by the user meanwhile
        later = await _run(executor, "cat late.env; echo end", ws)
    finally:
        await executor.aclose()

    assert first.output == "ok\n"
    assert "late-secret" not in later.output and "end" in later.output


def _mentioning(*words: str) -> list[str]:
    """The command lines of live processes that contain one of `words`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if any(w in line for w in words) and process_alive(int(entry.name)):
                found.append(line)
    return found


@needs_podman
def test_a_killed_lathe_leaves_neither_its_container_nor_its_command(tmp_path, fake_openai):
    # After `kill -9` of lathe the container stayed Up with its keeper looping for ever,
    # the command's `podman exec` and conmon re-parented to init: only `aclose` removed it.
    ws = calculator(tmp_path)
    command = "setsid sleep 2001 & uname -n > started; sleep 2002"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Hang(60))
    engine_args = ", ".join(f'"{a}"' for a in PODMAN.engine_args)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    lathe = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--sandbox", "container",
         "-c", "container.engine=podman", "-c", "container.rootfs=/",
         "-c", f"container.engine_args=[{engine_args}]", "start it"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    started = ws / "started"
    container = ""  # its id's first 12 digits: the container's host name
    try:
        while_running(lathe, lambda: started.exists() and started.read_text().strip(),
                      "the command never started in the container")  # fmt: skip
        container = started.read_text().strip()
        lathe.kill()
        lathe.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _containers(container, by="id") or _mentioning(container, str(ws)):
            left = [line[:60] for line in _mentioning(container, str(ws))]
            assert time.monotonic() < deadline, f"{_containers(container, by='id')} and {left}"
            time.sleep(0.1)
    finally:
        lathe.kill()
        lathe.wait(timeout=10)
        if container:
            subprocess.run(["podman", "rm", "--force", "--time", "0", container],
                           capture_output=True, check=False)  # fmt: skip


@needs_podman
@pytest.mark.parametrize("folder", ["ws", "w:s,1"])
async def test_a_denied_file_with_a_colon_is_masked_and_the_container_still_starts(
    tmp_path: Path, folder: str
) -> None:
    # Created by a command under `--deny 'read(*.pem)'`, `a:b.pem` made every later
    # command fail: the container could not start again with its mask.
    ws = tmp_path / folder
    ws.mkdir()
    executor = ContainerExecutor(ws, PODMAN, deny_read=["*.pem"])
    try:
        made = await _run(executor, "printf 'BEGIN KEY' > 'a:b,c.pem'; echo made", ws)
        later = await _run(executor, "cat 'a:b,c.pem'; echo second", ws)
    finally:
        await executor.aclose()

    assert (made.exit_code, made.output) == (0, "made\n")
    assert "Permission denied" in later.output and "second" in later.output
    assert "BEGIN KEY" not in later.output
