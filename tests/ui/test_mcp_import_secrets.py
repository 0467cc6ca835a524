"""`lathe mcp import` through the real command line: the secrets another agent's file
holds in clear become `${VAR}` references, whatever they look like."""

from __future__ import annotations

import json
import tomllib

from tests.ui.test_mcp_cmd import lathe


def test_import_takes_out_url_passwords_and_secret_headers_and_options(tmp_path):
    # The DB password in an argument, the bearer token and the API key were written
    # word for word into the project's .lathe/config.toml: none looked like a key.
    gemini = tmp_path / "gemini.json"
    dsn = "postgresql://app:S3cr3tPassw0rd@db.internal:5432/prod"
    gemini.write_text(
        json.dumps(
            {"mcpServers": {
                "pg": {"command": "npx",
                       "args": ["-y", "@modelcontextprotocol/server-postgres", dsn]},
                "api": {"httpUrl": "https://mcp.example.com/mcp",
                        "headers": {"Authorization": "Bearer 9f8e7d6c5b4a3210",
                                    "X-API-Key": "AKIAIOSFODNN7EXAMPLE", "X-Org": "acme"}},
            }}
        )
    )  # fmt: skip
    codex = tmp_path / "codex.toml"
    codex.write_text(
        '[mcp_servers.tool]\ncommand = "tool-server"\n'
        'args = ["--token=tok_SECRETVALUE12345678", "--verbose", "--mode=fast"]\n'
        'http_headers = { "X-Api-Key" = "xk_SECRETHEADERVALUE0000" }\n'
        '[mcp_servers.remote]\ncommand = "npx"\n'
        'args = ["mcp-remote", "https://r.example/mcp", "--header", "Authorization: Bearer r3m0te",'
        ' "--api-key", "short-key-1", "-e", "DB_PASSWORD=hunter22", "--key-file", "/etc/k.pem"]\n'
        'env = { DB_PASSWORD = "hunter22", LOG_LEVEL = "debug" }\n'
    )
    proj = tmp_path / "proj"
    proj.mkdir()

    result = lathe("mcp", "import", "-C", str(proj), "--project", str(gemini), tmp_path=tmp_path)
    other = lathe("mcp", "import", "-C", str(proj), "--project", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    assert other.returncode == 0, other.stderr
    written = (proj / ".lathe" / "config.toml").read_text()
    for secret in (
        "S3cr3tPassw0rd", "9f8e7d6c5b4a3210", "AKIAIOSFODNN7EXAMPLE",
        "tok_SECRETVALUE12345678", "xk_SECRETHEADERVALUE0000", "r3m0te", "short-key-1",
        "hunter22",
    ):  # fmt: skip
        assert secret not in written
    servers = tomllib.loads(written)["mcp"]["servers"]
    assert servers["pg"]["args"][2] == "postgresql://app:${PG_ARG_2_PASSWORD}@db.internal:5432/prod"
    assert servers["api"]["headers"] == {
        "Authorization": "Bearer ${API_AUTHORIZATION}", "X-API-Key": "${API_X_API_KEY}",
        "X-Org": "acme",
    }  # fmt: skip
    assert servers["tool"]["args"] == ["--token=${TOOL_ARG_0}", "--verbose", "--mode=fast"]
    assert servers["tool"]["headers"] == {"X-Api-Key": "${TOOL_X_API_KEY}"}
    assert servers["remote"]["args"] == [
        "mcp-remote", "https://r.example/mcp", "--header", "Authorization: Bearer ${REMOTE_ARG_3}",
        "--api-key", "${REMOTE_ARG_5}", "-e", "DB_PASSWORD=${DB_PASSWORD}", "--key-file",
        "/etc/k.pem",
    ]  # fmt: skip
    assert servers["remote"]["env"] == {"DB_PASSWORD": "${DB_PASSWORD}", "LOG_LEVEL": "debug"}
    told = result.stdout + other.stdout
    for variable in (
        "PG_ARG_2_PASSWORD", "API_AUTHORIZATION", "API_X_API_KEY", "TOOL_ARG_0", "TOOL_X_API_KEY",
        "REMOTE_ARG_3", "REMOTE_ARG_5", "DB_PASSWORD",
    ):  # fmt: skip
        assert f"export {variable} " in told, told


def test_import_leaves_settings_that_only_sound_like_secrets_as_they_are(tmp_path):
    # `--no-auth` took `mcp-server-fetch` as its value (the package was gone), and plain
    # URLs, a password store's name, a key's file, a tokenizer and an auth scheme all
    # became ${VAR}s the user had to export before the server started again.
    codex = tmp_path / "codex.toml"
    codex.write_text(
        '[mcp_servers.fetch]\ncommand = "uvx"\nargs = ["--no-auth", "mcp-server-fetch"]\n'
        '[mcp_servers.sso]\ncommand = "sso-server"\n'
        'args = ["--keycloak-url", "https://sso.example.com", "--token-url=https://auth.example/token",'
        ' "--password-store=basic", "--token", "--verbose", "--api-key", "./keys/api.txt"]\n'
        'env = { AUTH_URL = "https://login.example.com/oauth", SSL_KEY_FILE = "certs/server.key",'
        ' TOKENIZER = "cl100k_base" }\n'
        '[mcp_servers.web]\nurl = "https://mcp.example.com/mcp"\n'
        'http_headers = { "X-Auth-Scheme" = "oauth2" }\n'
    )

    result = lathe("mcp", "import", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    servers = tomllib.loads((tmp_path / "config.toml").read_text())["mcp"]["servers"]
    assert servers["fetch"]["args"] == ["--no-auth", "mcp-server-fetch"]
    assert servers["sso"]["args"] == [
        "--keycloak-url", "https://sso.example.com", "--token-url=https://auth.example/token",
        "--password-store=basic", "--token", "--verbose", "--api-key", "./keys/api.txt",
    ]  # fmt: skip
    assert servers["sso"]["env"] == {
        "AUTH_URL": "https://login.example.com/oauth", "SSL_KEY_FILE": "certs/server.key",
        "TOKENIZER": "cl100k_base",
    }  # fmt: skip
    assert servers["web"]["headers"] == {"X-Auth-Scheme": "oauth2"}
    assert "export" not in result.stdout, result.stdout


def test_import_replaces_a_url_query_secret_where_its_parameter_is(tmp_path):
    # The token's value was replaced where it first appeared, inside `region=abc123`,
    # and the token itself stayed in the file.
    url = "https://h.example.com/mcp?region=abc123&token=abc&next=a%20b"
    codex = tmp_path / "codex.toml"
    codex.write_text(
        f'[mcp_servers.h]\nurl = "{url}"\n'
        f'[mcp_servers.q]\ncommand = "mcp-remote"\nargs = ["{url}"]\n'
    )

    result = lathe("mcp", "import", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    servers = tomllib.loads((tmp_path / "config.toml").read_text())["mcp"]["servers"]
    kept = "https://h.example.com/mcp?region=abc123&token="
    assert servers["h"]["url"] == kept + "${H_TOKEN}&next=a%20b"
    assert servers["q"]["args"] == [kept + "${Q_ARG_0_TOKEN}&next=a%20b"]
    assert "export H_TOKEN " in result.stdout and "export Q_ARG_0_TOKEN " in result.stdout


def test_import_takes_a_secret_out_of_a_references_default(tmp_path):
    # `${DB_PASSWORD:-hunter2}` was written word for word: the reference, default and
    # all, was left out before the value was judged.
    gemini = tmp_path / "gemini.json"
    gemini.write_text(
        json.dumps(
            {"mcpServers": {"db": {"command": "db-server",
                                   "args": ["--password", "${PW:-hunter2}", "--log=${LOG:-info}"],
                                   "env": {"DB_PASSWORD": "${DB_PASSWORD:-hunter2}"}}}}
        )
    )  # fmt: skip

    result = lathe("mcp", "import", str(gemini), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (tmp_path / "config.toml").read_text()
    assert "hunter2" not in written
    servers = tomllib.loads(written)["mcp"]["servers"]
    assert servers["db"]["env"] == {"DB_PASSWORD": "${DB_PASSWORD}"}
    assert servers["db"]["args"] == ["--password", "${DB_ARG_1}", "--log=${LOG:-info}"]
    assert "export DB_PASSWORD " in result.stdout and "export DB_ARG_1 " in result.stdout


def test_import_takes_out_a_plain_word_credential_header_and_a_cookie(tmp_path):
    # `X-Api-Key: changeme` stayed as written (a plain word), then the config check
    # refused the import (exit 2) for the literal it had left.
    gemini = tmp_path / "gemini.json"
    gemini.write_text(
        json.dumps(
            {"mcpServers": {"api": {"httpUrl": "https://mcp.example.com/mcp",
                                    "headers": {"X-Api-Key": "changeme",
                                                "Cookie": "session=abcdef",
                                                "X-Auth-Scheme": "basic"}}}}
        )
    )  # fmt: skip
    proj = tmp_path / "proj"
    proj.mkdir()

    result = lathe("mcp", "import", "-C", str(proj), "--project", str(gemini), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (proj / ".lathe" / "config.toml").read_text()
    assert "changeme" not in written and "abcdef" not in written
    headers = tomllib.loads(written)["mcp"]["servers"]["api"]["headers"]
    assert headers == {
        "X-Api-Key": "${API_X_API_KEY}", "Cookie": "${API_COOKIE}", "X-Auth-Scheme": "basic"
    }  # fmt: skip


def test_import_appends_to_a_config_file_that_starts_with_a_byte_order_mark(tmp_path):
    # The config loader reads such a file; the import refused it as invalid TOML.
    codex = tmp_path / "codex.toml"
    codex.write_text('[mcp_servers.tool]\ncommand = "tool-server"\n')
    proj = tmp_path / "proj"
    (proj / ".lathe").mkdir(parents=True)
    (proj / ".lathe" / "config.toml").write_bytes(b"\xef\xbb\xbf[agent]\nmax_turns = 5\n")

    result = lathe("mcp", "import", "-C", str(proj), "--project", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = tomllib.loads((proj / ".lathe" / "config.toml").read_text(encoding="utf-8-sig"))
    assert written["agent"]["max_turns"] == 5 and "tool" in written["mcp"]["servers"]
