"""Writing config values as TOML: for `config show` and the `config init` starter file.

The starter file is generated from the schema's field docstrings, so it can never
describe a key that does not exist or miss one that does.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from pydantic import BaseModel

from lathe.config.keys import format_key, node_of
from lathe.config.schema import Config, field_docs


def toml_value(value: Any) -> str:
    """A TOML literal for a config value; None (unset) has none and shows as `(unset)`."""
    match value:
        case None:
            return "(unset)"
        case bool():
            return "true" if value else "false"
        case int() | float():
            return repr(value)
        case str():
            return json.dumps(value, ensure_ascii=False)
        case list() | tuple():
            return "[" + ", ".join(toml_value(v) for v in value) + "]"
        case dict():
            items = (f"{format_key((k,))} = {toml_value(v)}" for k, v in value.items())
            return "{" + ", ".join(items) + "}"
    return json.dumps(str(value))


_HEADER = """\
# lathe {scope} configuration.
#
# Every key is optional: uncomment a line to change it. Precedence, lowest first:
# defaults < user file < project file (.lathe/config.toml) < environment (LATHE_*)
# < command-line flags < -c key=value. `lathe config show` prints every effective value
# and where it came from.
#
# API keys are never stored here: a provider's api_key_env is the NAME of the
# environment variable that holds its key (LATHE_API_KEY, when set, wins).
"""

_EXAMPLES = """\
# A custom OpenAI-compatible endpoint and a model served by it:
#
# [providers.my-server]
# kind = "openai-compatible"
# base_url = "http://127.0.0.1:8000/v1"
# api_key_env = "MY_SERVER_API_KEY"
#
# [models.my-model]
# provider = "my-server"
# id = "served-model-id"
# context_window = 32768
# max_output_tokens = 4096
# profile = "small"
#
# A model profile: what the loop, the prompt and the wire do for a kind of model.
# Tables merge key by key over the built-in ones (default, small, local, openai);
# `lathe config show` prints the selected model's with the origin of each value.
#
# [profiles.small]
# workspace_snapshot_bytes = 4096
"""


def starter_file(scope: str) -> str:
    """The commented starter file `lathe config init` writes; every line is a comment or
    a table header, so it loads as the defaults, and uncommenting any line keeps it valid."""
    defaults = Config()
    parts = [_HEADER.format(scope=scope)]
    parts.append(_section(Config, defaults, ()))
    parts.append(_EXAMPLES)
    return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)


def _section(cls: type[BaseModel], values: BaseModel, path: tuple[str, ...]) -> str:
    lines: list[str] = []
    tables: list[str] = []
    docs = field_docs(cls)
    for name, field in cls.model_fields.items():
        kind, inner = node_of(field.annotation)
        value = getattr(values, name)
        if kind == "map" and inner[0] == "model":
            continue  # named tables: the built-in catalog, shown by `config show`
        if kind == "model":
            tables.append(_section(inner, value, (*path, name)))
            continue
        if value is None:
            # TOML has no null: show an example, since uncommenting must stay valid.
            lines.extend(_comment(f"{docs.get(name, '')} (Unset by default.)"))
            lines.append(f"# {name} = {toml_value((field.examples or [''])[0])}")
        else:
            lines.extend(_comment(docs.get(name, "")))
            lines.append(f"# {name} = {toml_value(value)}")
        lines.append("")
    head = [f"[{format_key(path)}]"] if path else []
    if path and cls.__doc__:
        head = [*_comment(cls.__doc__), *head]
    return "\n".join([*head, *lines, *tables])


def _comment(text: str) -> list[str]:
    paragraph = " ".join(text.split())
    return ["# " + line for line in textwrap.wrap(paragraph, 86)]
