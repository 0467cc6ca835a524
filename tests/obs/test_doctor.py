"""`lathe doctor` against the fake server, a closed port, a missing key, a bad config."""

from __future__ import annotations

import http.server
import shlex
import socket
import subprocess
import threading

from tests.exec.test_container import PODMAN, needs_podman
from tests.fakes.openai_server import Reply
from tests.obs.conftest import lathe


def _line(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if line.split()[1:2] == [name])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_doctor_passes_with_the_fake_server_up(tmp_path, workspace, fake_openai):
    key = "sk-doctor-key-4f3a2b1c0d9e"
    env = {"OPENAI_API_KEY": key, "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    fake_openai.enqueue(Reply("OK"))
    result = lathe(
        "doctor",
        "--model",
        "fake-model",
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "--live",
        cwd=workspace,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert _line(result.stdout, "config").startswith("ok")
    assert "OPENAI_API_KEY is set" in _line(result.stdout, "api")
    assert _line(result.stdout, "endpoint").startswith("ok")
    assert "1 model listed" in _line(result.stdout, "endpoint")
    assert _line(result.stdout, "live").startswith("ok")
    for tool in ("rg", "git", "home"):
        assert _line(result.stdout, tool).startswith("ok"), result.stdout
    assert "failed" in result.stdout.splitlines()[-1] and " 0 failed" in result.stdout
    assert key not in result.stdout + result.stderr
    # GET /models with the key, then one chat request asking for one token.
    models, chat = fake_openai.requests
    assert (models.method, models.path) == ("GET", "/v1/models")
    assert models.headers["authorization"] == f"Bearer {key}"
    assert chat.body["max_tokens"] == 1


def test_doctor_fails_with_a_hint_when_the_endpoint_is_down(tmp_path, workspace):
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")}
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = lathe(
        "doctor", "--model", "m", "--base-url", url, "-C", str(workspace), cwd=workspace, env=env
    )
    assert result.returncode == 1
    endpoint = _line(result.stdout, "endpoint")
    assert endpoint.startswith("FAIL") and url in endpoint and "connection refused" in endpoint
    hint = result.stdout.splitlines()[result.stdout.splitlines().index(endpoint) + 1]
    assert "fix: start the server" in hint and "--base-url" in hint


def test_doctor_fails_naming_the_missing_key_variable(tmp_path, workspace):
    result = lathe(
        "doctor",
        "--model",
        "gpt-4o",
        "-C",
        str(workspace),
        cwd=workspace,
        env={"LATHE_HOME": str(tmp_path / "home")},
    )
    assert result.returncode == 1
    key = _line(result.stdout, "api")
    assert key.startswith("FAIL") and "OPENAI_API_KEY is not set" in key
    assert "export OPENAI_API_KEY=" in result.stdout
    assert "endpoint" not in result.stdout  # nothing to ask without a key


def test_doctor_reports_a_config_error_and_an_unwritable_home(tmp_path, workspace):
    (workspace / ".lathe").mkdir()
    (workspace / ".lathe" / "config.toml").write_text("[agent]\nmax_turn = 3\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = lathe(
        "doctor", "-C", str(workspace), cwd=workspace, env={"LATHE_HOME": str(blocker / "home")}
    )
    assert result.returncode == 1
    config = _line(result.stdout, "config")
    assert config.startswith("FAIL") and "max_turn" in config and "config.toml" in config
    home = _line(result.stdout, "home")
    assert home.startswith("FAIL") and "not writable" in home
    assert "fix: set LATHE_HOME" in result.stdout


def test_doctor_says_what_the_sandbox_sees_and_what_a_read_rule_cannot_hide(tmp_path, workspace):
    import subprocess

    (workspace / "sub").mkdir()
    (workspace / "sub" / ".env").write_text("KEY=1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "env"], check=True)
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}

    result = lathe(
        "doctor", "-C", str(workspace), "-c", 'permissions.deny=["read(.env)"]',
        "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "-m", "m",
        cwd=workspace, env=env,
    )  # fmt: skip

    sandbox = _line(result.stdout, "sandbox")
    assert "read-only" in sandbox and "private /tmp" in sandbox
    rules = _line(result.stdout, "rules")
    assert ".env (1 path here)" in rules and "created after a command starts" in rules
    history = _line(result.stdout, "history")
    assert history.startswith("warn") and "sub/.env" in history and "without .git" in history


def test_an_untrusted_project_base_url_gets_no_request_and_no_key(tmp_path, workspace, fake_openai):
    key = "sk-doctor-key-4f3a2b1c0d9e"
    (workspace / ".lathe").mkdir(exist_ok=True)
    (workspace / ".lathe" / "config.toml").write_text(
        f'[providers.openai]\nbase_url = "{fake_openai.base_url}"\n'
    )
    env = {"OPENAI_API_KEY": key, "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    fake_openai.enqueue(Reply("OK"))

    doctor = ("doctor", "--live", "--model", "openai/fake-model", "-C", str(workspace))
    result = lathe(*doctor, cwd=workspace, env=env)

    assert fake_openai.requests == []  # the key never went to the project's address
    assert result.returncode == 1
    trust = _line(result.stdout, "trust")
    assert trust.startswith("FAIL") and "providers.openai.base_url" in trust, result.stdout
    assert "lathe trust" in result.stdout
    assert key not in result.stdout + result.stderr

    trusted = lathe("trust", "-C", str(workspace), cwd=workspace, env=env)
    assert trusted.returncode == 0, trusted.stderr
    again = lathe(*doctor, cwd=workspace, env=env)
    assert _line(again.stdout, "endpoint").startswith("ok"), again.stdout
    assert fake_openai.requests  # once trusted, checked as a run would use it


def test_doctor_fails_on_the_rules_a_run_refuses_and_says_full_mode_has_no_sandbox(
    tmp_path, workspace
):
    # It said 10 checks were ok for a rule `lathe run` stops on, and that commands ran
    # in a sandbox with `approval = "full"`.
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    base = ("--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "-m", "m")
    for rule in ('permissions.deny=["bash(rm *)"]', 'permissions.allow=["Edit(src/**)"]'):
        result = lathe("doctor", "-C", str(workspace), "-c", rule, *base, cwd=workspace, env=env)
        assert result.returncode == 1
        # Found as the config loads: the line names where the rule came from.
        line = _line(result.stdout, "config")
        assert line.startswith("FAIL") and "permissions." in line, result.stdout
    full = lathe("doctor", "-C", str(workspace), "-c", 'permissions.approval="full"', *base,
                 cwd=workspace, env=env)  # fmt: skip
    sandbox = _line(full.stdout, "sandbox")
    assert "no sandbox" in sandbox and "private /tmp" not in sandbox


def test_doctor_fails_the_model_check_for_a_provider_kind_nothing_provides(
    tmp_path, workspace, fake_openai
):
    # Every check passed, then `lathe run` refused the kind.
    env = {"OPENAI_API_KEY": "sk-x", "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    result = lathe(
        "doctor", "--model", "pp/x", "-c", "providers.pp.kind=openai-compatibel",
        "-c", f"providers.pp.base_url={fake_openai.base_url}", "-C", str(workspace),
        cwd=workspace, env=env,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    line = _line(result.stdout, "model")
    assert line.startswith("FAIL") and "unknown provider kind 'openai-compatibel'" in line


def _container_doctor(tmp_path, workspace, *settings: str):
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    overrides = [a for s in ("permissions.sandbox.engine=container", *settings) for a in ("-c", s)]
    return lathe(
        "doctor", "-C", str(workspace), "--base-url", f"http://127.0.0.1:{_closed_port()}/v1",
        "-m", "m", *overrides, cwd=workspace, env=env,
    )  # fmt: skip


@needs_podman
def test_doctor_with_a_container_that_cannot_start_says_there_is_no_sandbox(tmp_path, workspace):
    # It failed the container, then printed bubblewrap's view of the host marked ok, and
    # its fix `podman run --rm /nonexist:O true` dropped `--rootfs`.
    result = _container_doctor(
        tmp_path, workspace, "container.engine=podman", "container.rootfs=/nonexist"
    )

    lines = result.stdout.splitlines()
    container = _line(result.stdout, "container")
    assert container.startswith("FAIL"), result.stdout
    rerun = lines[lines.index(container) + 1].split("`")[1]
    assert rerun == "podman run --rm --network none --rootfs /nonexist:O true"
    again = subprocess.run(shlex.split(rerun), capture_output=True, text=True, check=False)
    assert again.returncode != 0 and "/nonexist" in again.stderr  # the check, repeated
    sandbox = _line(result.stdout, "sandbox")
    assert not sandbox.startswith("ok") and "container" in sandbox, result.stdout
    assert "/usr" not in sandbox and "tool folders" not in sandbox


@needs_podman
def test_doctor_describes_what_a_command_sees_in_the_container(tmp_path, workspace):
    engine_args = ", ".join(f'"{a}"' for a in PODMAN.engine_args)
    result = _container_doctor(
        tmp_path, workspace, "container.engine=podman", "container.rootfs=/",
        f"container.engine_args=[{engine_args}]",
    )  # fmt: skip

    assert _line(result.stdout, "container").startswith("ok"), result.stdout
    sandbox = _line(result.stdout, "sandbox")
    assert sandbox.startswith("ok") and "podman container" in sandbox, result.stdout
    assert "root folder / through an overlay" in sandbox and "private /tmp" in sandbox
    assert "none of this machine's tool folders" in sandbox and "/usr" not in sandbox


def test_doctor_keeps_the_key_and_masks_credentials_in_the_base_url(tmp_path, workspace):
    # Its /models check sent the URL's user:password as Basic in place of the key's
    # Bearer, and a failing answer printed the URL with the password in it.
    key = "sk-doctor-key-4f3a2b1c0d9e"
    env = {"OPENAI_API_KEY": key, "LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    seen: list[str] = []

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://alice:pw-5ecret-77@127.0.0.1:{server.server_address[1]}/v1"
        result = lathe(
            "doctor", "--model", "m", "--base-url", url, "-C", str(workspace),
            cwd=workspace, env=env,
        )  # fmt: skip
        server.shutdown()
    assert "pw-5ecret-77" not in result.stdout + result.stderr
    assert "HTTP 500" in _line(result.stdout, "endpoint"), result.stdout
    assert seen == [f"Bearer {key}"]
