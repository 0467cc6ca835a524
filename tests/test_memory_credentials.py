"""The memory never holds a credential: a `memory` write whose text holds one shaped
like a key (`AKIA...`, `ghp_...`, `sk-...`, `github_pat_...`, a PEM private key) is
refused, naming what looked like one and where to store it instead. Only exact values
of the environment's variables were masked; a key pasted into the conversation was
stored and put in every later session's system prompt. A word that only begins like a
key (a variable's name, a path, a snake_case identifier) is kept: the refusal itself
tells the model to store the variable's name."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.e2e.test_instructions_and_memory import run
from tests.fakes.openai_server import Call, Reply

GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98ZgFQcR2\n-----END RSA PRIVATE KEY-----"
CREDENTIALS = [
    ("The deploy key is AKIAIOSFODNN7EXAMPLE for us-east-1.", "AKIAIOSFODNN7EXAMPLE", "'AKIA'…"),
    (f"CI pushes with token {GITHUB}.", GITHUB, "'ghp_'…"),
    ("OPENAI_API_KEY=sk-9f8e7d6c5b4a39281706f5e4 works here.", "sk-9f8e7d6c5b4a39281706f5e4",
     "'sk-'…"),
    ("Use 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv'.",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "'github_pat_'…"),
    (f"The server key:\n{PEM}", "MIIEowIBAAKCAQEA7bq98ZgFQcR2", "a PEM private key"),
    ("The session key id is ASIAY34FZKBOKMUTVV7A.", "ASIAY34FZKBOKMUTVV7A", "'ASIA'…"),
    ("Stripe: rk_live_0123456789abcdefghij.", "rk_live_0123456789abcdefghij", "'rk_'…"),
    # Reproduced: each of these was added and sent in every later session's prompt.
    ("DATABASE_URL=postgres://admin:S3cr3tPassw0rd@db.internal:5432/app", "S3cr3tPassw0rd",
     "'postgres://admin:…@db.internal:5432/app'"),
    ("GitLab token glpat-abcdEFGH1234ijklMNOP for the registry.", "glpat-abcdEFGH1234ijklMNOP",
     "'glpat-'…"),
    ("slack xoxb-123456789012-1234567890123-abcdefABCDEF posts the report.",
     "123456789012-1234567890123-abcdefABCDEF", "'xoxb-'…"),
    (f"Publish with {NPM}.", NPM[4:], "'npm_'…"),
    (f"The staging API accepts {JWT}", JWT.split(".")[2], "a JWT"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "an AWS secret access key"),
    ("The webhook is https://hooks.example.com/in?token=Zq81mXr0Lk27pW93", "Zq81mXr0Lk27pW93",
     "'https://hooks.example.com/in?token=…'"),
    ("curl -H 'Authorization: Bearer 4f9a0c1e-77b2-4d1a-9c3e-5b6a7d8e9f01x' $API",
     "4f9a0c1e-77b2-4d1a-9c3e-5b6a7d8e9f01x", "a bearer token"),
]  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (tmp_path / "config").mkdir()
    return repo


# Named by what each is, not by its text: the command's environment carries the test's
# id (PYTEST_CURRENT_TEST), and a credential in a variable's value is masked in output.
@pytest.mark.parametrize(
    ("text", "secret", "named"), CREDENTIALS, ids=[named for _, _, named in CREDENTIALS]
)
def test_a_memory_write_holding_a_credential_is_refused(
    tmp_path, ws, fake_openai, text, secret, named
):
    replace = {"action": "replace", "scope": "project", "old_text": "tox", "text": text}
    fake_openai.enqueue(
        Reply(calls=[Call("memory", {"action": "add", "scope": "project", "text": text})]),
        Reply(calls=[Call("memory", {"action": "add", "scope": "project", "text": "Use tox."})]),
        Reply(calls=[Call("memory", replace)]),
        Reply("Done."),
        Reply("Next."),
    )

    first = run(fake_openai, ws, tmp_path, "remember it")
    second = run(fake_openai, ws, tmp_path, "go on")

    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    results = [
        m["content"] for m in fake_openai.chat_bodies()[3]["messages"] if m["role"] == "tool"
    ]
    refused, added, replaced = results
    for said in (refused, replaced):
        assert said.startswith("Error: "), said
        assert "looks like a credential" in said and named in said, said
        assert "where it is kept" in said, said
        assert secret not in said
    assert added.startswith("Done")
    system = fake_openai.chat_bodies()[-1]["messages"][0]["content"]
    assert "Use tox." in system and secret not in system


@pytest.mark.parametrize(
    "text",
    [
        "Use sk-learn-compatible estimators; skip_ci_for_docs_only_changes in CI.",
        "The deploy reads its key from $ASIA_PACIFIC_KEY_V2.",
        "The deploy reads its key from ASIA_PACIFIC_KEY_V2.",
        "Models are cached in hf_cache/bert-base-uncased-v2.",
        "The orders table's key column is pk_orders_2024_id.",
        # Neither a hash, a UUID, a path nor a reference to where a secret is kept.
        "The fixture commit is 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39; run 123e4567-e89b-"
        "12d3-a456-426614174000 logs to /var/log/app/2024-01-01T00:00:00.log.",
        "The DSN is postgres://app:${DB_PASSWORD}@localhost:5432/app (DB_PASSWORD in .env).",
        "Docs: https://docs.example.com/api?page=2&token_type=bearer and https://x.org/a:b@c.",
        "Set AWS_SECRET_ACCESS_KEY in the CI secrets; aws_secret_access_key comes from ~/.aws.",
        "Send the Bearer token from $API_TOKEN; JWTs start with eyJ.",
    ],
)
def test_words_that_only_begin_like_a_key_are_kept(tmp_path, ws, fake_openai, text):
    fake_openai.enqueue(
        Reply(calls=[Call("memory", {"action": "add", "scope": "project", "text": text})]),
        Reply("Done."),
    )

    result = run(fake_openai, ws, tmp_path, "remember it")

    assert result.returncode == 0, result.stderr
    assert fake_openai.chat_bodies()[-1]["messages"][-1]["content"].startswith("Done")
