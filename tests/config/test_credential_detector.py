"""One detector of credentials in text (`lathe.config.secrets.find_credentials`), used by
the `memory` refusal, `lathe config show`'s masking, the value check of the variables
commands start with (`lathe.exec.env`) and the sandbox's git config judge.

Reproduced on landed main: a query parameter was judged by a piece of its name, so the
memory refused (and `config show` masked) `?assignee=octocat-dev`, `?keywords=...`,
`?author=...`, `?design=...`; and the detectors disagreed: the memory stored
`Authorization: Basic <base64>` which the environment hid, a Bearer token of 8 to 15
characters was hidden from commands but stored in memory, and `glpat-`/`xoxb-`/`npm_`
tokens were stored in config files as settings.
"""

from __future__ import annotations

import pytest

from lathe.config import secrets
from lathe.config.secrets import key_prefix, looks_like_secret, mask_credentials, secret_header
from lathe.exec.env import holds_secret_value
from lathe.memory import credentials_in

ORDINARY_URLS = [
    "https://github.com/o/r/issues?assignee=octocat-dev",
    "https://example.com/search?keywords=migration2024",
    "https://example.com/posts?author=alice_smith",
    "https://example.com/pages?design=homepage-v2",
    "https://example.com/list?monkey=banana42&sigma=deviation1",
    "https://example.com/a?passenger=ada-lovelace&tokenizer=bpe-2024",
]


@pytest.mark.parametrize("url", ORDINARY_URLS)
def test_a_query_parameter_is_judged_by_whole_parts_of_its_name(url):
    assert credentials_in(f"Issues are tracked at {url} for the team.") == []
    assert mask_credentials(url) == url
    assert not holds_secret_value(url)


@pytest.mark.parametrize(
    "name",
    ["token", "access_token", "accessToken", "api_key", "api-key", "apiKey", "apikey", "key",
     "secret", "client_secret", "password", "passwd", "pwd", "pass", "auth", "auth_token",
     "sig", "signature", "X-Amz-Signature", "X-Amz-Credential", "credentials"],
)  # fmt: skip
def test_a_query_parameter_named_like_a_credential_is_one(name):
    url = f"https://example.com/in?{name}=Zq81mXr0Lk27pW93&page=2"

    assert [what for _, _, what in secrets.find_credentials(url)] != []
    assert "Zq81mXr0Lk27pW93" not in mask_credentials(url)


@pytest.mark.parametrize(
    "name",
    ["Authorization", "Proxy-Authorization", "X-API-Key", "X-Auth-Token", "Cookie",
     "PRIVATE-TOKEN", "X-Api-Secret", "apikey", "X-Goog-Api-Key"],
)  # fmt: skip
def test_header_names_still_carry_credentials(name):
    assert secret_header(name)


@pytest.mark.parametrize("name", ["Accept", "X-Author", "X-Keyword", "Content-Design"])
def test_header_names_that_only_contain_such_a_word_do_not(name):
    assert not secret_header(name)


AGREED = [
    "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
    "curl -H 'Authorization: Bearer Zk8Xq2Lm9Np4' https://api.example",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----",
    '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEv1\\n"}',
    "glpat-abcdEFGH1234ijklMNOP",
    "xoxb-123456789012-1234567890123-abcdefABCDEF",
    "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "sk-proj-abcdefghijklmnop1234567890",
    "postgres://admin:S3cr3tPassw0rd@db.internal:5432/app",
    "Server=db;User Id=app;Password=Sup3rS3cret!;",
    "https://a.blob.core.windows.net/c?sv=2022-11-02&sr=c&sig=c2lnbmF0dXJlMTIz",
]


@pytest.mark.parametrize("text", AGREED)
def test_the_memory_and_the_environment_agree_on_a_credential(text):
    assert credentials_in(text) != []
    assert holds_secret_value(text)
    assert mask_credentials(text) != text


NOT_CREDENTIALS = [
    "Send the Bearer token from $API_TOKEN; JWTs start with eyJ.",
    "Basic authentication is off; use Bearer auth.",
    "postgres://app:${DB_PASSWORD}@localhost:5432/app",
    "ssh://git@github.com/o/r",
    "https://docs.example.com/api?page=2&token_type=bearer",
    "The fixture commit is 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39.",
]


@pytest.mark.parametrize("text", NOT_CREDENTIALS)
def test_the_memory_and_the_environment_agree_on_what_is_none(text):
    assert credentials_in(text) == []
    assert not holds_secret_value(text)


@pytest.mark.parametrize(
    "token",
    ["glpat-abcdEFGH1234ijklMNOP", "xoxb-123456789012-1234567890123-abcdefABCDEF",
     "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghs_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"],
)  # fmt: skip
def test_issued_tokens_are_key_prefixes_so_config_refuses_them(token):
    assert key_prefix(token)
    assert looks_like_secret(token)


def test_spans_are_in_order_and_name_what_they_found():
    text = "use ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 then Bearer Zk8Xq2Lm9Np4Rt7Vw1"

    spans = secrets.find_credentials(text)

    assert [text[start:end] for start, end, _ in spans] == [
        "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "Zk8Xq2Lm9Np4Rt7Vw1",
    ]
    assert [what for _, _, what in spans] == ["'ghp_'…", "a bearer token"]
