"""`api_key_env` names a variable; only a value shaped like a key is refused as one. An
AWS key id is AKIA or ASIA and 16 more capitals and digits: the bare prefix had refused
`ASIA_OPENAI_API_KEY`, a name that was accepted before."""

from __future__ import annotations

from tests.e2e.test_instructions_and_memory import lathe
from tests.fakes.openai_server import Reply

ASIA_KEY = "sk-asia-5c4b3a29181706f5e4d3"


def _run(tmp_path, server, name: str):
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[providers.openai]\napi_key_env = "{name}"\n')
    (tmp_path / "ws").mkdir()
    return lathe(
        tmp_path, "run", "--model", "m", "--base-url", server.base_url, "-C", "ws", "hi",
        env={"ASIA_OPENAI_API_KEY": ASIA_KEY},
    )  # fmt: skip


def test_a_variable_named_like_an_aws_prefix_carries_the_key(tmp_path, fake_openai):
    fake_openai.responder = lambda request: Reply("Hello.")

    result = _run(tmp_path, fake_openai, "ASIA_OPENAI_API_KEY")

    assert result.returncode == 0, result.stderr
    assert [r.headers["authorization"] for r in fake_openai.requests] == [f"Bearer {ASIA_KEY}"]


def test_an_aws_key_id_in_api_key_env_is_refused(tmp_path, fake_openai):
    result = _run(tmp_path, fake_openai, "AKIAIOSFODNN7EXAMPLE")

    assert result.returncode == 2, result.stderr
    assert "api_key_env: this looks like an API key itself" in result.stderr
    assert "AKIAIOSFODNN7EXAMPLE" not in result.stderr
    assert fake_openai.requests == []
