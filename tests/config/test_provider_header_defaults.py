"""A provider's headers take `${VAR:-default}` as MCP settings do: the default when
VAR is unset or empty."""

from pathlib import Path

from lathe.config import load_config, resolve_model


def test_a_header_falls_back_to_its_default_when_the_variable_is_unset_or_empty(
    workspace: Path, user_file: Path
) -> None:
    # With ORG unset: "ORG is not set"; with ORG empty, an empty X-Org was sent.
    user_file.write_text(
        "[providers.lab]\n"
        'base_url = "http://10.0.0.5:8000/v1"\n'
        'headers = { "X-Org" = "${ORG:-acme}", "X-Team" = "t-${TEAM:-}" }\n'
    )
    config = load_config(workspace).config

    unset = resolve_model(config, "lab/coder", environ={})
    empty = resolve_model(config, "lab/coder", environ={"ORG": "", "TEAM": ""})
    given = resolve_model(config, "lab/coder", environ={"ORG": "team-7", "TEAM": "blue"})

    assert unset.headers == {"X-Org": "acme", "X-Team": "t-"}
    assert empty.headers == {"X-Org": "acme", "X-Team": "t-"}
    assert given.headers == {"X-Org": "team-7", "X-Team": "t-blue"}
    assert given.secrets({"ORG": "team-7", "TEAM": "blue"}) == ["team-7", "blue"]
