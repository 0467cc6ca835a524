"""Server lifecycle against a fake llama-server executable: start and health wait, a
port already in use, a server that dies mid-run, stop leaving no process, and the warm
server kept across runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from tests.fakes.user_config import user_config_file

from lathe.errors import Transport, UsageError
from lathe.local import server as srv
from lathe.local.install import is_verified
from lathe.local.models import MODELS, LocalModel, model_path

from .conftest import pid_alive

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF fake")
    return path


def get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, json.loads(resp.read())


def test_start_waits_for_health_and_serves(
    fake_llama: Path, model_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "slow")
    monkeypatch.setenv("FAKE_LLAMA_DELAY", "1.0")
    argv_file = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(argv_file))
    monkeypatch.setattr(srv, "auto_threads", lambda: 1)
    server = srv.LocalServer(
        model_file, alias="tiny-model", binary=fake_llama, log_path=tmp_path / "server.log"
    )
    with server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert get(f"http://127.0.0.1:{server.port}/health") == (200, {"status": "ok"})
        assert get(f"{server.base_url}/models")[1] == {"data": [{"id": "tiny-model"}]}
        server.ensure_running()
        pid = server.pid
    assert pid is not None and not pid_alive(pid)
    argv = json.loads(argv_file.read_text())
    assert argv == [
        "--model",
        str(model_file),
        "--host",
        "127.0.0.1",
        "--port",
        str(server.port),
        "--alias",
        "tiny-model",
        "--jinja",
        "--ctx-size",
        "8192",
        "--threads",
        "1",
        "--parallel",
        "1",
        "--no-webui",
        "--chat-template-file",
        str(srv.TEMPLATE),
    ]


@pytest.mark.parametrize(
    ("cores", "idle", "threads"),
    [(2, 1.0, 2), (2, 0.8, 2), (2, 0.5, 1), (2, 0.0, 1), (4, 0.75, 3), (64, 1.0, 8)],
)
def test_auto_threads_takes_the_idle_cores(
    cores: int, idle: float, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(srv.os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(srv, "_idle_share", lambda cpus: idle)
    assert srv.auto_threads() == threads


def test_auto_threads_falls_back_to_the_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(srv.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(srv, "_idle_share", lambda cpus: None)
    monkeypatch.setattr(srv.os, "getloadavg", lambda: (1.3, 0.0, 0.0))
    assert srv.auto_threads() == 1


def test_idle_share_is_measured_from_proc_stat() -> None:
    share = srv._idle_share(os.sched_getaffinity(0))
    assert share is not None and 0.0 <= share <= 1.0
    assert srv._cpu_times({10_000}) is None  # no such CPU: nothing to count


def test_options_reach_the_command_line(model_file: Path) -> None:
    options = srv.ServerOptions(
        ctx_size=4096, threads=2, chat_template="stock", extra_args=("--cache-reuse", "256")
    )
    server = srv.LocalServer(
        model_file, alias="m", binary=Path("/bin/llama-server"), port=1234, options=options
    )
    cmd = server.command()
    assert cmd[cmd.index("--ctx-size") + 1] == "4096"
    assert cmd[cmd.index("--threads") + 1] == "2"
    assert "--chat-template-file" not in cmd
    assert cmd[-2:] == ["--cache-reuse", "256"]


def test_a_port_already_in_use_is_refused(fake_llama: Path, model_file: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = srv.LocalServer(model_file, alias="m", binary=fake_llama, port=port)
        with pytest.raises(UsageError, match=f"Port {port} on 127.0.0.1 is already in use"):
            server.start()
        assert server.pid is None


def test_a_server_that_cannot_start_reports_its_log(
    fake_llama: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    server = srv.LocalServer(model_file, alias="m", binary=fake_llama, log_path=tmp_path / "s.log")
    with pytest.raises(Transport) as caught:
        server.start()
    assert "exited with code 1" in str(caught.value)
    assert "failed to load model: unsupported file format" in str(caught.value)
    assert caught.value.retryable


def test_a_crash_with_repacking_retries_without_it_and_remembers(
    fake_llama: Path,
    model_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    lathe_home: Path,
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "amx")
    argv_file = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(argv_file))
    with srv.LocalServer(model_file, alias="m", binary=fake_llama) as server:
        server.ensure_running()
        assert "--no-repack" in json.loads(argv_file.read_text())
    record = lathe_home / "local" / "no-repack.txt"
    assert record.read_text() == f"{fake_llama}\n"

    argv_file.unlink()
    with srv.LocalServer(model_file, alias="m", binary=fake_llama) as server:
        assert "--no-repack" in server.command()
    assert "--no-repack" in json.loads(argv_file.read_text())


def test_a_server_stopped_by_us_leaves_no_log_but_a_crash_keeps_it(
    fake_llama: Path, model_file: Path, lathe_home: Path
) -> None:
    logs = lathe_home / "local" / "logs"
    with srv.LocalServer(model_file, alias="m", binary=fake_llama) as server:
        assert server.log_path is not None and server.log_path.parent == logs
        assert server.log_path.exists()
    assert list(logs.iterdir()) == []

    server = srv.LocalServer(model_file, alias="m", binary=fake_llama)
    server.start()
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)
    time.sleep(0.3)
    with pytest.raises(Transport):
        server.check_alive()
    server.stop()
    assert server.log_path is not None and server.log_path.exists()


def test_health_timeout_names_the_last_answer(
    fake_llama: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "never")
    server = srv.LocalServer(model_file, alias="m", binary=fake_llama)
    with pytest.raises(Transport, match="did not become ready within 2s") as caught:
        server.start(timeout=2)
    assert "Loading model" in str(caught.value)
    assert server.pid is None


def test_a_server_dying_mid_run_raises_a_typed_provider_error(
    fake_llama: Path, model_file: Path
) -> None:
    with srv.LocalServer(model_file, alias="m", binary=fake_llama) as server:
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}/die", data=b"{}")
        urllib.request.urlopen(request, timeout=5).read()
        deadline = time.monotonic() + 10
        with pytest.raises(Transport) as caught:
            while time.monotonic() < deadline:
                server.ensure_running()
                time.sleep(0.05)
        assert "exited with code 3" in str(caught.value)
        assert "simulated crash mid-run" in str(caught.value)


def test_a_health_answer_cut_off_by_a_dying_server_is_no_answer() -> None:
    # A server killed while it writes /health's body: the headers promise bytes that
    # never come. That is "not answering", not an http.client error escaping the check.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def answer_half() -> None:
            connection, _ = listener.accept()
            with connection:
                connection.recv(4096)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n")

        thread = threading.Thread(target=answer_half)
        thread.start()
        status, reason = srv._health(f"http://127.0.0.1:{port}")
        thread.join()

    assert status == 0 and "IncompleteRead" in reason


def test_killed_server_is_detected(fake_llama: Path, model_file: Path) -> None:
    with srv.LocalServer(model_file, alias="m", binary=fake_llama) as server:
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        time.sleep(0.3)
        with pytest.raises(Transport, match="exited with code -9"):
            server.check_alive()


def test_stop_leaves_no_process_and_is_idempotent(fake_llama: Path, model_file: Path) -> None:
    server = srv.LocalServer(model_file, alias="m", binary=fake_llama)
    server.start()
    pid = server.pid
    assert pid is not None and pid_alive(pid)
    server.stop()
    server.stop()
    assert not pid_alive(pid)
    with pytest.raises(Transport, match="not running"):
        server.check_alive()


def test_server_ignoring_sigterm_is_killed(tmp_path: Path, model_file: Path) -> None:
    stubborn = tmp_path / "stubborn-server"
    stubborn.write_text(
        f"#!{sys.executable}\n"
        "import signal, sys, os\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, "
        f"{str(Path(__file__).parent / 'fake_llama_server.py')!r}, *sys.argv[1:]])\n"
    )
    stubborn.chmod(0o755)
    server = srv.LocalServer(model_file, alias="m", binary=stubborn)
    server.start()
    pid = server.pid
    assert pid is not None
    started = time.monotonic()
    srv._terminate(pid, 0.5)
    assert time.monotonic() - started < 5
    server.stop()
    assert not pid_alive(pid)


def test_interpreter_exit_stops_a_managed_server(
    fake_llama: Path, model_file: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    script = (
        "from pathlib import Path\n"
        "from lathe.local.server import LocalServer\n"
        f"s = LocalServer(Path({str(model_file)!r}), alias='m', binary=Path({str(fake_llama)!r}))\n"
        "s.start()\n"
        f"Path({str(pid_file)!r}).write_text(str(s.pid))\n"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid)


def test_kill_9_of_lathe_takes_the_managed_server_down(
    fake_llama: Path, model_file: Path, tmp_path: Path
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux-only")
    import subprocess

    pid_file = tmp_path / "pid"
    script = (
        "import time\nfrom pathlib import Path\n"
        "from lathe.local.server import LocalServer\n"
        f"s = LocalServer(Path({str(model_file)!r}), alias='m', binary=Path({str(fake_llama)!r}))\n"
        "s.start()\n"
        f"Path({str(pid_file)!r}).write_text(str(s.pid))\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid)


# ------------------------------------------------------------ warm server and CLI


@pytest.fixture
def installed_tiny(lathe_home: Path, monkeypatch: pytest.MonkeyPatch) -> LocalModel:
    """A 'verified' tiny model under LATHE_HOME (the fake server never reads it)."""
    data = b"GGUF tiny"
    import hashlib

    model = LocalModel(
        name="tiny",
        title="t",
        wire_id="tiny-wire",
        package_prefix="x",
        version="1",
        chunks=1,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    monkeypatch.setitem(MODELS, "tiny", model)
    path = model_path(model)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    path.with_name(path.name + ".sha256").write_text(model.sha256)
    assert is_verified(path, model.size, model.sha256)
    return model


def test_ensure_local_server_refuses_a_model_not_installed(lathe_home: Path) -> None:
    with pytest.raises(
        UsageError,
        match=r"local 0.5b model is not installed. Run `lathe local "
        r"install --model 0.5b`",
    ):
        srv.ensure_local_server("local/0.5b")


def test_ensure_local_server_starts_a_managed_server_once(
    installed_tiny: LocalModel, fake_llama: Path
) -> None:
    endpoint = srv.ensure_local_server("local/tiny")
    try:
        assert endpoint.owned and endpoint.model == "tiny-wire"
        assert get(f"{endpoint.base_url}/models")[1] == {"data": [{"id": "tiny-wire"}]}
        assert srv.ensure_local_server("tiny") == endpoint
    finally:
        managed = srv.managed_server("tiny")
        assert managed is not None
        pid = managed.pid
        managed.stop()
        srv._managed.clear()
    assert pid is not None and not pid_alive(pid)


def test_the_local_model_waits_longer_for_its_first_byte(
    installed_tiny: LocalModel, fake_llama: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lathe.config import ENV_KEYS
    from lathe.llm.timeouts import Timeouts
    from lathe.ui.setup import RunOptions, prepare

    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", user_config_file(tmp_path / "no-user-config.toml"))
    try:
        # A provider-wide idle limit that a CPU model reading a long prompt would trip.
        options = RunOptions(
            workspace=tmp_path, model="local/tiny", overrides=["providers.openai.idle_timeout_s=5"]
        )
        setup = prepare(options)
    finally:
        managed = srv.managed_server("tiny")
        assert managed is not None
        managed.stop()
        srv._managed.clear()

    assert setup.endpoint.timeouts == Timeouts(
        total_s=600.0,
        idle_s=300.0,
        total_key="providers.openai.timeout_s",
        idle_key="local.idle_timeout_s",
    )


@pytest.mark.parametrize(("profile", "expected"), [(None, "local"), ("default", "default")])
def test_the_local_model_gets_the_local_profile_unless_a_key_names_one(
    installed_tiny: LocalModel,
    fake_llama: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    profile: str | None,
    expected: str,
) -> None:
    from lathe.config import ENV_KEYS
    from lathe.ui.setup import RunOptions, prepare

    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", user_config_file(tmp_path / "no-user-config.toml"))
    try:
        setup = prepare(RunOptions(workspace=tmp_path, model="local/tiny", profile=profile))
    finally:
        managed = srv.managed_server("tiny")
        assert managed is not None
        managed.stop()
        srv._managed.clear()

    assert setup.model.profile.name == expected
    assert setup.model.profile.settings.reason_first is (expected == "local")
    # The local server is not api.openai.com, though it is reached as the openai provider.
    assert setup.endpoint.wire.max_tokens_field == "max_tokens"


def test_warm_server_is_reused_reported_and_stopped(
    installed_tiny: LocalModel, fake_llama: Path, lathe_home: Path
) -> None:
    warm, reused = srv.start_warm("tiny")
    try:
        assert not reused
        state = json.loads((lathe_home / "local" / "server.json").read_text())
        assert state["pid"] == warm.pid and state["model"] == "tiny"
        again, reused = srv.start_warm("local/tiny")
        assert reused and again == warm
        assert srv.read_warm() == warm
        endpoint = srv.ensure_local_server("tiny")
        assert endpoint == srv.LocalEndpoint(warm.base_url, "tiny-wire", owned=False, ctx_size=8192)
    finally:
        stopped = srv.stop_warm()
    assert stopped == srv.WarmStop(warm, "stopped")
    assert not pid_alive(warm.pid)
    assert srv.read_warm() is None
    assert not (lathe_home / "local" / "server.json").exists()
    assert srv.stop_warm() is None


def test_a_run_on_the_warm_server_is_given_its_real_context_size(
    installed_tiny: LocalModel, fake_llama: Path
) -> None:
    # The run asks for the configured 8192 tokens, but the warm server has 32768: the
    # run must budget with what the server has.
    warm = srv.start_warm("tiny", options=srv.ServerOptions(ctx_size=32768, threads=1))[0]
    try:
        endpoint = srv.ensure_local_server("tiny", options=srv.ServerOptions(ctx_size=8192))
    finally:
        srv.stop_warm()
    assert endpoint == srv.LocalEndpoint(warm.base_url, "tiny-wire", owned=False, ctx_size=32768)


def test_a_dead_warm_server_is_forgotten(
    installed_tiny: LocalModel, fake_llama: Path, lathe_home: Path
) -> None:
    warm = srv.start_warm("tiny")[0]
    os.killpg(warm.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while pid_alive(warm.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.read_warm() is None
    assert not (lathe_home / "local" / "server.json").exists()


def test_cli_start_status_stop(installed_tiny: LocalModel, fake_llama: Path) -> None:
    from click.testing import CliRunner

    from lathe.ui.local_cmd import local

    runner = CliRunner()
    # click.Choice was built from MODELS at import; "tiny" is not among the choices
    # there, so drive start through the library and the rest through the CLI.
    warm = srv.start_warm("tiny", options=srv.ServerOptions(threads=3, parallel=2))[0]
    try:
        status = runner.invoke(local, ["status"])
        assert status.exit_code == 0, status.output
        # How many threads it runs with: one where two cores were free is a slow server.
        shown = (
            f"warm server: local/tiny at {warm.base_url} (3 threads, 2 slots, 8192-token "
            f"context each, pid {warm.pid}"
        )
        assert shown in status.output
        assert "llama-server: " + str(fake_llama) in status.output
    finally:
        stop = runner.invoke(local, ["stop"])
    assert stop.output == f"Stopped local/tiny (pid {warm.pid}).\n"
    assert not pid_alive(warm.pid)
    assert runner.invoke(local, ["stop"]).output == "No warm server.\n"


def test_a_run_budgets_with_the_warm_servers_window_not_the_configured_one(
    installed_tiny: LocalModel, fake_llama: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A warm server started with --ctx-size 32768 was reused, and the run budgeted for
    # local.ctx_size (8192): max_tokens 1024 against a 32k window.
    from lathe.config import ENV_KEYS
    from lathe.ui.setup import RunOptions, prepare

    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", user_config_file(tmp_path / "no-user-config.toml"))
    srv.start_warm("tiny", options=srv.ServerOptions(ctx_size=32768, threads=1))
    try:
        setup = prepare(RunOptions(workspace=tmp_path, model="local/tiny"))
    finally:
        srv.stop_warm()

    assert setup.model.context_window == 32768
    assert setup.model.max_output_tokens > 8192 // 8


def test_a_pid_below_one_is_no_process_and_no_group_to_signal() -> None:
    # kill(0) reaches the caller's own group, kill(-1) every process it may signal, and
    # waitpid(0 or -1) reaps any child: a record naming such a pid stopped lathe's group.
    from lathe.exec.supervision import pid_alive as alive
    from lathe.exec.supervision import signal_group

    assert not alive(0) and not alive(-1)
    for pgid in (0, -1):
        with pytest.raises(ValueError, match="not a process group"):
            signal_group(pgid, 0)
