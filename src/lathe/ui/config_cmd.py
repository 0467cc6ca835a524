"""`lathe config show|path|init`: the configuration as the user sees it.

The lead CLI attaches `config_group` to the main command. Heavy work (pydantic, the
schema) is imported inside each command so `lathe --help` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from lathe.config.secrets import masked_value
from lathe.ui.options import LatheGroup, workspace_option


class _ConfigProblem(click.ClickException):
    exit_code = 2  # usage or config error, as everywhere in lathe

    def format_message(self) -> str:
        return self.message


_workspace_option = workspace_option(
    "Workspace whose project config applies (default: current directory)."
)


@click.group("config", cls=LatheGroup)
def config_group() -> None:
    """Show, locate and create lathe's configuration files."""


@config_group.command("show")
@_workspace_option
@click.option(
    "-c",
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one key, e.g. -c agent.max_turns=20 (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def show(workspace: Path, overrides: tuple[str, ...], as_json: bool) -> None:
    """Print every effective value and where it came from, and the selected model and
    its profile; secrets masked. A project file's settings that need trust and do not
    have it are listed as ignored, and the values shown are those applied without them."""
    import os

    from lathe.config.render import toml_value
    from lathe.errors import UsageError

    try:
        loaded, ignored = applied_config(workspace, overrides)
    except UsageError as exc:
        raise _ConfigProblem(str(exc)) from None
    if as_json:
        import json

        document = _json_document(loaded, ignored)
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    for label, file in (("user", loaded.user_file), ("project", loaded.project_file)):
        click.echo(f"# {label} file: {file or 'none found'}" + _exists(file))
    if ignored:
        click.echo(
            f"# ignored until you trust them with `lathe trust` ({ignored.file} sets them; "
            "`lathe run` refuses to start until then):"
        )
        for key, value in ignored.settings:
            click.echo(f"#   {key} = {toml_value(masked_value(value))}")
    for line in _value_lines(loaded):
        click.echo(line)
    click.echo("")
    for line in _key_lines(loaded.config, os.environ):
        click.echo(line)
    click.echo("")
    click.echo(_selected_model(loaded.config))
    for line in _profile_lines(loaded):
        click.echo(line)


@config_group.command("path")
@_workspace_option
def path(workspace: Path) -> None:
    """Print where the user and project config files are and whether they exist."""
    from lathe.config.loader import user_config_path

    for label, file in (("user", user_config_path()), ("project", _project_file(workspace))):
        click.echo(f"{label + ' file:':<14}{file}{_exists(file)}")


@config_group.command("init")
@_workspace_option
@click.option("--project", is_flag=True, help="Write the project file instead of the user file.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init(workspace: Path, project: bool, force: bool) -> None:
    """Write a commented starter config file."""
    from lathe.config.loader import user_config_path
    from lathe.config.render import starter_file

    target = _project_file(workspace) if project else user_config_path()
    if target.exists() and not force:
        raise _ConfigProblem(f"{target} already exists; use --force to overwrite it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(starter_file("project" if project else "user"), encoding="utf-8")
    except OSError as exc:
        raise _ConfigProblem(f"cannot write {target}: {exc.strerror or exc}") from None
    click.echo(f"wrote {target}")


def applied_config(workspace: Path, overrides: Sequence[str] = ()) -> tuple[Any, Any]:
    """The configuration a run in `workspace` applies (`LoadedConfig`), and the project
    file's settings it leaves out until the user trusts them (`trust.ProjectSettings`,
    None when there are none): those `lathe run` refuses and `lathe doctor` flags — an
    untrusted `base_url` is not where a run sends the key, nor a raised instruction
    budget what it reads. The verify command is not among them: in the sandbox it needs
    no trust (doctor's judgement too, since neither can foresee the run's sandbox)."""
    import dataclasses

    from lathe.config import load_config
    from lathe.config.keys import parse_key
    from lathe.config.trust import untrusted_settings
    from lathe.home import lathe_home

    loaded = load_config(workspace, overrides=overrides)
    found = untrusted_settings(loaded, lathe_home(), commands_sandboxed=True, serving=True)
    ignored = found and tuple((k, v) for k, v in found.settings if k != "agent.verify")
    if not ignored:
        return loaded, None
    left_out = {parse_key(key) for key, _ in ignored}
    applied = load_config(workspace, overrides=overrides, leave_out=left_out)
    return applied, dataclasses.replace(found, settings=ignored)


def _project_file(workspace: Path) -> Path:
    """The project file that applies to `workspace`, or where one would be created."""
    from lathe.config.loader import find_project_file, project_root

    return find_project_file(workspace) or project_root(workspace) / ".lathe" / "config.toml"


def _exists(file: Path | None) -> str:
    if file is None:
        return ""
    if file == Path(os.devnull):
        return f"  (none: LATHE_CONFIG={os.devnull})"
    return "  (exists)" if file.is_file() else "  (not found)"


_APPROVAL = ("permissions", "approval")
_FACES = (("interactive", "interactive"), ("run", "lathe run"))  # (JSON name, shown name)


def _approval_by_face(loaded: Any) -> dict[str, tuple[str, str]]:
    """{face: (approval mode, origin)}: the faces differ only while no layer sets it."""
    from lathe.ui.setup import effective_approval

    origin = loaded.origin(_APPROVAL)
    by_face = {}
    for face, shown in _FACES:
        headless = face == "run"
        face_origin = f"default for {shown}" if headless and origin == "default" else origin
        by_face[face] = (effective_approval(loaded, headless=headless), face_origin)
    return by_face


def _approval_row(loaded: Any) -> tuple[str, str]:
    """`permissions.approval` as text: what each face runs with, since its default
    depends on the face (`ask` interactive, `auto` for `lathe run`)."""
    from lathe.config.render import toml_value

    by_face = _approval_by_face(loaded)
    interactive, run = by_face["interactive"][0], by_face["run"][0]
    if interactive == run:
        return f"permissions.approval = {toml_value(run)}  (every face)", loaded.origin(_APPROVAL)
    return (
        f"permissions.approval = {toml_value(interactive)}  "
        f"(interactive; lathe run: {toml_value(run)})",
        "default (each face has its own)",
    )


def _shown_values(loaded: Any) -> list[tuple[str, Any, str]]:
    """(key, value, origin) of every leaf, secrets masked, in schema order."""
    return [(key, value, str(origin)) for key, value, origin in loaded.shown_values()]


def _json_document(loaded: Any, ignored: Any) -> dict[str, Any]:
    """What `config show --json` prints: the files, every value with its origin (the
    approval also per face), the project settings ignored until trusted (`untrusted`:
    the file and each setting, or null), the key variables (masked) and the selected
    model."""
    import os

    from lathe.config import KEY_OVERRIDE_ENV

    values: dict[str, Any] = {
        key: {"value": value, "origin": origin} for key, value, origin in _shown_values(loaded)
    }
    model, profile = _model_and_profile(loaded)
    values["permissions.approval"]["faces"] = {
        face: {"value": mode, "origin": origin}
        for face, (mode, origin) in _approval_by_face(loaded).items()
    }
    files = {"user": loaded.user_file, "project": loaded.project_file}
    return {
        "files": {
            label: None if file is None else {"path": str(file), "exists": file.is_file()}
            for label, file in files.items()
        },
        "values": values,
        "untrusted": ignored
        and {
            "file": str(ignored.file),
            "settings": {key: masked_value(value) for key, value in ignored.settings},
        },
        "api_keys": {
            "override": {
                "env": KEY_OVERRIDE_ENV,
                "state": _key_state(KEY_OVERRIDE_ENV, os.environ),
            },
            "providers": {
                name: {"env": var, "state": _key_state(var, os.environ) if var else "no key needed"}
                for name, var in _key_variables(loaded.config)
            },
        },
        "selected_model": _selected_model(loaded.config).removeprefix("# selected model: "),
        "model": model,
        "profile": profile,
    }


def _value_lines(loaded: Any) -> list[str]:
    from lathe.config.render import toml_value

    rows = []
    for key, value, origin in _shown_values(loaded):
        if key == "permissions.approval":
            rows.append(_approval_row(loaded))
        else:
            rows.append((f"{key} = {toml_value(value)}", origin))
    width = min(max(len(text) for text, _ in rows), 64)
    header = "# effective configuration; precedence: default < user < project < env < flag < -c"
    return [header, *(f"{text:<{width}}  # {origin}" for text, origin in rows)]


def _key_state(var: str, environ: Any) -> str:
    """A key variable's value masked, or "not set"; the key itself is never shown."""
    from lathe.config import mask_secret

    return mask_secret(environ[var]) if environ.get(var) else "not set"


def _key_variables(config: Any) -> list[tuple[str, str | None]]:
    return [(name, provider.api_key_env) for name, provider in sorted(config.providers.items())]


def _key_lines(config: Any, environ: Any) -> list[str]:
    from lathe.config import KEY_OVERRIDE_ENV

    override = _key_state(KEY_OVERRIDE_ENV, environ)
    lines = [
        "# API keys: read from the environment when a model is used, never stored",
        f"{KEY_OVERRIDE_ENV:<24}{override}  (when set, used for every provider)",
    ]
    for name, var in _key_variables(config):
        shown = f"{var:<24}{_key_state(var, environ)}" if var else "no key needed"
        lines.append(f"{name:<12}{shown}")
    return lines


def _selected_model(config: Any) -> str:
    from lathe.config import resolve_model
    from lathe.errors import UsageError

    try:
        model = resolve_model(config)
    except UsageError as exc:
        return f"# selected model: {config.model!r} does not resolve: {exc}"
    return (
        f"# selected model: {config.model} -> {model.provider} ({model.kind}) "
        f"{model.model_id} at {model.shown_url}; context {model.context_window}, "
        f"max output {model.max_output_tokens}"
    )


def _selected_profile(config: Any) -> Any:
    """The selected model's profile (`lathe.config.Profile`), or None when the model
    does not resolve. An embedded local model's is found without starting its server."""
    from lathe.config import resolve_model
    from lathe.config.profiles import resolve_profile
    from lathe.errors import UsageError

    try:
        if config.model == "local" or config.model.startswith("local/"):
            from lathe.local.models import get_model

            fallback = get_model(config.model).profile
            return resolve_profile(
                config, entry=None, provider="openai", own_endpoint=False, fallback=fallback
            )
        return resolve_model(config).profile
    except UsageError:
        return None


def _profile_lines(loaded: Any) -> list[str]:
    from lathe.config.keys import format_key
    from lathe.config.profiles import profile_values
    from lathe.config.render import toml_value

    profile = _selected_profile(loaded.config)
    if profile is None:
        return []
    if profile.chosen_by:
        chosen = format_key(profile.chosen_by)
        head = f"# profile: {profile.name}, chosen by {chosen} ({loaded.origin(chosen)})"
    else:
        head = f"# profile: {profile.name} (no key names one: the built-in choice for this model)"
    rows = [
        (f"{name} = {toml_value(masked_value(value))}", origin)
        for name, value, origin in profile_values(loaded, profile)
    ]
    width = max(len(text) for text, _ in rows)
    return ["", head, *(f"{text:<{width}}  # {origin}" for text, origin in rows)]


def _model_and_profile(loaded: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The selected model as `config show --json` gives it, and its profile: each value
    with its origin."""
    from lathe.config import resolve_model
    from lathe.config.keys import format_key
    from lathe.config.profiles import profile_values
    from lathe.errors import UsageError

    try:
        resolved = resolve_model(loaded.config)
        model: dict[str, Any] = {
            "name": loaded.config.model,
            "provider": resolved.provider,
            "kind": resolved.kind,
            "model_id": resolved.model_id,
            "base_url": masked_value(resolved.base_url),
            "context_window": resolved.context_window,
            "max_output_tokens": resolved.max_output_tokens,
        }
    except UsageError as exc:
        model = {"name": loaded.config.model, "error": str(exc)}
    profile = _selected_profile(loaded.config)
    if profile is None:
        return model, None
    chosen = format_key(profile.chosen_by) if profile.chosen_by else None
    return model, {
        "name": profile.name,
        "chosen_by": chosen,
        "chosen_by_origin": loaded.origin(chosen) if chosen else None,
        "values": {
            name: {"value": masked_value(value), "origin": origin}
            for name, value, origin in profile_values(loaded, profile)
        },
    }
