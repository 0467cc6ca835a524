"""Secrets are kept out at the source: commands, the verify command and hooks start
without lathe's provider keys or secret-looking variables, and everything a request
carries goes through the same masking as what is saved.

Reproduced on landed main: the key reached the model reversed (`| rev`) or
base64-encoded, and in `full` mode the verify output carried it unmasked into the
request (masking was applied to the session file, not to what the model is sent).
"""

from __future__ import annotations

import base64
import json
import uuid

from tests.fakes.openai_server import Call, Reply
from tests.obs.conftest import lathe


def _bodies_text(server) -> str:
    return json.dumps(server.chat_bodies())


def _secrets() -> dict[str, str]:
    return {
        "OPENAI_API_KEY": f"sk-src-{uuid.uuid4().hex}",
        "MY_SERVICE_TOKEN": f"tok{uuid.uuid4().hex}",
        "DB_PASSWORD": f"pw{uuid.uuid4().hex[:12]}",
        "AWS_SECRET_ACCESS_KEY": uuid.uuid4().hex,
        "GITHUB_TOKEN": f"ghp_{uuid.uuid4().hex}",
        # Names that once reached commands: a DSN holds its key in the URL's user part.
        "DB_PASS": f"pw{uuid.uuid4().hex[:12]}",
        "GPG_PASSPHRASE": f"pp{uuid.uuid4().hex[:12]}",
        "SENTRY_DSN": f"https://{uuid.uuid4().hex}@o1.ingest.example/2",
        # CI's own: GitLab's job token and registry login, a chat webhook, a cookie.
        "CI_JOB_JWT": f"eyJ{uuid.uuid4().hex}",
        "DOCKER_AUTH_CONFIG": f'{{"auths": {{"r": {{"auth": "{uuid.uuid4().hex}"}}}}}}',
        "SLACK_WEBHOOK_URL": f"https://hooks.slack.example/services/{uuid.uuid4().hex}",
        "SESSION_COOKIE": f"sid={uuid.uuid4().hex}",
    }


def test_commands_never_see_keys_or_secret_looking_variables(tmp_path, workspace, fake_openai):
    secrets = _secrets()
    probe = "; ".join(
        f"printf '%s' \"${name}\" | rev; echo; printf '%s' \"${name}\" | base64" for name in secrets
    )
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": probe}), Call("bash", {"command": "env"})]),
        Reply("Done."),
    )

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(workspace),
        "-c", 'permissions.env_passthrough=["GITHUB_TOKEN"]', "look around",
        cwd=workspace, env={**secrets, "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    sent = _bodies_text(fake_openai)
    for name, value in secrets.items():
        encoded = base64.b64encode(value.encode()).decode()
        if name == "GITHUB_TOKEN":  # passed through on purpose
            assert value[::-1] in sent
            continue
        assert value[::-1] not in sent, name
        assert encoded not in sent, name
        assert f"{name}=" not in sent, name


def test_what_a_request_carries_is_masked_like_what_is_saved(tmp_path, workspace, fake_openai):
    key = f"sk-req-{uuid.uuid4().hex}"
    (workspace / "notes.txt").write_text(f"the key is {key}\n")
    fake_openai.enqueue(Reply("Done."), Reply("Still done."))

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(workspace),
        "--approval", "full", "--verify", "cat notes.txt; exit 1", "--max-turns", "2",
        "finish",
        cwd=workspace, env={"OPENAI_API_KEY": key, "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    sent = _bodies_text(fake_openai)
    assert "the key is" in sent  # the verify output did reach the model ...
    assert key not in sent  # ... masked


def test_hooks_start_without_the_keys(tmp_path, workspace, fake_openai):
    secrets = _secrets()
    (workspace / ".lathe").mkdir()
    (workspace / ".lathe" / "config.toml").write_text(
        '[[hooks.session_start]]\ncommand = "env > hook-env.txt"\n'
    )
    fake_openai.enqueue(Reply("Done."))

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(workspace),
        "--trust-project", "hello",
        cwd=workspace, env={**secrets, "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    seen = (workspace / "hook-env.txt").read_text()
    assert "PATH=" in seen
    for name, value in secrets.items():
        assert value not in seen, name


def test_a_variable_a_provider_header_reads_is_hidden_from_commands(
    tmp_path, workspace, fake_openai
):
    value = f"gw{uuid.uuid4().hex}"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "printf '%s' \"$GATEWAY_HEADER\" | rev"})]),
        Reply("Done."),
    )

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(workspace),
        "-c", 'providers.openai.headers={"X-Gateway" = "Bearer ${GATEWAY_HEADER}"}', "look",
        cwd=workspace, env={"GATEWAY_HEADER": value, "OPENAI_API_KEY": "sk-test",
                            "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0].headers["x-gateway"] == f"Bearer {value}"
    assert value[::-1] not in _bodies_text(fake_openai)


def test_which_variables_hold_secrets():
    from lathe.exec.env import command_environment, secret_values

    environ = {
        "PATH": "/bin", "PWD": "/w", "OLDPWD": "/", "SSH_AUTH_SOCK": "/tmp/agent.1",
        "TERM": "xterm", "HOME_URL": "https://example.com/a",
        "GITLAB_PAT": "glpat-x1", "MYSQL_PWD": "pw", "PROXY_AUTH": "Basic abc",
        "DATABASE_URL": "postgres://app:s3cretpw@db/app", "NPM_TOKEN": "npm_x",
        "POSTGRES_PASSWORD": "postgres",
        # Settings, not secrets, though they name one: tools lose them if hidden.
        "JWT_ALGORITHM": "RS256", "WEBHOOK_PORT": "8080", "COOKIE_DOMAIN": "example.com",
        "AZURE_AUTH_LOCATION": "/etc/az.json", "COOKIECUTTER_CONFIG": "/etc/cc.yaml",
    }  # fmt: skip

    kept = command_environment(environ, passthrough=["NPM_*"])

    assert sorted(kept) == ["AZURE_AUTH_LOCATION", "COOKIECUTTER_CONFIG", "COOKIE_DOMAIN",
                            "HOME_URL", "JWT_ALGORITHM", "NPM_TOKEN", "OLDPWD", "PATH", "PWD",
                            "SSH_AUTH_SOCK", "TERM", "WEBHOOK_PORT"]  # fmt: skip
    # A plain word is never masked: it would turn every "postgres" in the code into "…".
    assert secret_values(environ) == ["glpat-x1", "postgres://app:s3cretpw@db/app"]


def test_a_secret_holding_quotes_or_backslashes_is_masked_in_messages():
    from lathe.obs.redact import Redactor
    from lathe.types import UserMessage

    secret = 'Pa\\ss"w0rd!!-abc'
    masked = Redactor([secret]).message(UserMessage(content=f"the password is {secret}"))

    assert secret not in masked.content


def test_a_key_streamed_in_pieces_is_masked_in_the_deltas_too(tmp_path, workspace, fake_openai):
    # Each text_delta was masked on its own, so a key the model repeated, cut into
    # 4-character deltas, went whole into `--json`, the event log and `attach`.
    key = f"sk-src-{uuid.uuid4().hex}"
    fake_openai.enqueue(Reply(f"the header was Bearer {key} ok", text_chunk=4))

    result = lathe(
        "run", "--json", "--model", "m", "--base-url", fake_openai.base_url,
        "-C", str(workspace), "say the header", cwd=workspace,
        env={"OPENAI_API_KEY": key, "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    streamed = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert key not in streamed
    assert streamed == f"the header was Bearer {key[:3]}…{key[-4:]} ok"
    logs = list((tmp_path / "home").rglob("*.jsonl"))
    assert logs and not any(key in log.read_text() for log in logs)
