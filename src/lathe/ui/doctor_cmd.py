"""`lathe doctor`: check that lathe can run here, each check with ok/warn/fail and a fix.

Checks, in order: the config files parse and the model resolves (the embedded model as
`lathe run` takes it: installed, llama-server found, a warm server answering, none
started to check); the provider's key variable is set (the key itself is never
printed); the endpoint answers (GET /models, or a one-token chat request with --live);
`rg`, `git` and `bwrap` are present and work; gVisor, and the container when the config
chooses it, start; what a command sees in the chosen sandbox (none when it cannot
start); every installed plugin loads (one that does not is a warning: runs skip it);
LATHE_HOME is writable. Exit 0 when no check failed, 1 otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import click

from lathe.plural import plural
from lathe.ui.options import LatheCommand, workspace_option

Level = Literal["ok", "warn", "fail"]
_ENDPOINT_TIMEOUT_S = 5.0
_LIVE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Check:
    level: Level
    name: str
    detail: str
    fix: str = ""


@click.command("doctor", cls=LatheCommand)
@workspace_option("Workspace whose project config applies (default: the current directory).")
@click.option("--model", "-m", help="Check this model instead of the configured one.")
@click.option("--base-url", help="Check this OpenAI-compatible endpoint.")
@click.option("-c", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key.")
@click.option("--live", is_flag=True, help="Also send a one-token chat request to the model.")
def doctor_command(
    workspace: Path, model: str | None, base_url: str | None, overrides: tuple[str, ...], live: bool
) -> None:
    """Check config, API key, endpoint, tools and LATHE_HOME; print a fix for each problem."""
    checks = run_checks(workspace, model, base_url, overrides, live=live)
    color = None if not os.environ.get("NO_COLOR") else False
    styles = {"ok": ("ok", "green"), "warn": ("warn", "yellow"), "fail": ("FAIL", "red")}
    for check in checks:
        label, colour = styles[check.level]
        mark = click.style(f"{label:<5}", fg=colour, bold=True)
        click.echo(f"{mark} {check.name:<10} {check.detail}", color=color)
        if check.fix and check.level != "ok":
            click.echo(f"{'':16} fix: {check.fix}", color=color)
    failed = sum(c.level == "fail" for c in checks)
    warned = sum(c.level == "warn" for c in checks)
    click.echo(
        f"\n{len(checks)} checks: {len(checks) - failed - warned} ok, "
        f"{plural(warned, 'warning')}, {failed} failed"
    )
    sys.exit(1 if failed else 0)


def run_checks(
    workspace: Path,
    model: str | None,
    base_url: str | None,
    overrides: Sequence[str],
    *,
    live: bool,
) -> list[Check]:
    from lathe.ui.setup import is_local_model

    checks: list[Check] = []
    loaded, resolved = _config_checks(checks, workspace, model, base_url, overrides)
    if loaded is not None and is_local_model(loaded.config.model):
        checks.extend(_local_checks(loaded, live=live))
    if loaded is not None and not _trust_check(checks, loaded):
        resolved = None  # the key must not go where an untrusted project file points
    if resolved is not None:
        key_ok = _key_check(checks, resolved)
        if key_ok:
            checks.append(_endpoint_check(resolved))
            if live:
                checks.append(_live_check(resolved))
    checks.append(_rg_check())
    checks.append(_command_check("git", ["git", "--version"], "install git (apt-get install git)"))
    checks.append(_bwrap_check())
    engine = loaded.config.permissions.sandbox.engine if loaded is not None else "bubblewrap"
    checks.append(_gvisor_check(chosen=engine == "gvisor"))
    if engine == "container" and loaded is not None:
        checks.append(_container_check(loaded))
    if loaded is not None:
        checks.extend(_sandbox_view_checks(workspace.expanduser().resolve(), loaded))
    checks.extend(_plugin_checks(loaded.config.permissions.executor if loaded else None))
    checks.append(_home_check())
    return checks


def _plugin_checks(executor: str | None) -> list[Check]:
    """One warning per plugin that fails to load (runs skip it), else one ok line; a
    failure when permissions.executor names an executor no plugin provides."""
    from lathe.plugins import EXECUTORS, survey

    found = survey()
    checks = [
        Check(
            "warn",
            "plugins",
            f"{p.name} ({p.group}, from {p.distribution}) does not load: {p.problem}; runs skip it",
            f"fix or uninstall {p.distribution.split(' ')[0]} (`lathe plugins` lists them)",
        )
        for p in found
        if p.problem
    ]
    if executor is not None and not any(
        p.group == EXECUTORS and p.name == executor and not p.problem for p in found
    ):
        checks.append(
            Check(
                "fail",
                "executor",
                f"permissions.executor = {executor!r}: no plugin executor of that name loads",
                "install the plugin that provides it, or unset permissions.executor",
            )
        )
    if not checks:
        loaded = ", ".join(f"{p.name} ({p.group})" for p in found)
        checks.append(Check("ok", "plugins", loaded or "none installed"))
    return checks


def _config_checks(checks, workspace, model, base_url, overrides):
    from lathe.config import load_config, resolve_model
    from lathe.errors import UsageError

    workspace = workspace.expanduser().resolve()
    try:
        loaded = load_config(
            workspace, flags={"model": model, "base_url": base_url}, overrides=overrides
        )
    except UsageError as exc:
        checks.append(Check("fail", "config", str(exc), "correct the file or key named above"))
        return None, None
    files = [
        f"user {loaded.user_file}" if loaded.user_file.is_file() else "no user file",
        f"project {loaded.project_file}" if loaded.project_file else "no project file",
    ]
    checks.append(Check("ok", "config", "parsed: " + "; ".join(files)))
    from lathe.ui.setup import is_local_model

    if is_local_model(loaded.config.model):
        return loaded, None  # no catalog entry: `_local_checks` takes it as a run does
    try:
        resolved = resolve_model(loaded.config, origins=loaded.origins)
        from lathe.llm.registry import check_kind

        check_kind(resolved.kind)  # a kind nothing provides: a run refuses it
    except UsageError as exc:
        checks.append(Check("fail", "model", str(exc), "choose a model with --model"))
        return loaded, None
    label = resolved.name or resolved.model_id
    priced = "" if resolved.prices.known else "; no prices in the catalog, cost not tracked"
    checks.append(
        Check(
            "ok",
            "model",
            f"{label} ({resolved.model_id}) on {resolved.provider} at {resolved.shown_url}{priced}",
        )
    )
    return loaded, resolved


def _local_checks(loaded, *, live: bool) -> list[Check]:
    """The embedded model as `lathe run` takes it (`ui/setup._local_model`), in its words,
    without starting a server to check: the model is installed; llama-server is found
    (only a warning while a warm server of the model answers: a run uses that one); the
    warm server answers, else a run starts its own; with --live, one token from it."""
    import dataclasses

    from lathe.config import resolve_model
    from lathe.errors import UsageError
    from lathe.local import get_model
    from lathe.local.install import require_server
    from lathe.local.server import recorded_warm, require_model

    try:
        model = get_model(loaded.config.model)
    except UsageError as exc:
        return [Check("fail", "model", str(exc), "choose a model with --model")]
    try:
        path = require_model(model)
    except UsageError as exc:
        fix = f"run `lathe local install --model {model.name}`"
        return [Check("fail", "model", str(exc), fix)]
    checks = [
        Check("ok", "model", f"local/{model.name} ({model.wire_id}), installed at {path}"),
        Check("ok", "api key", "the local model needs no key"),
    ]
    warm = recorded_warm()
    serving = warm if warm is not None and warm.model == model.name else None
    answers = serving is not None and serving.answers()
    try:
        checks.append(Check("ok", "server", f"llama-server {require_server()}"))
    except UsageError as exc:
        fix = (
            "set LATHE_LLAMA_SERVER to a llama-server binary, or unset it"
            if os.environ.get("LATHE_LLAMA_SERVER")
            else "run `lathe local install`"
        )
        if not answers:
            checks.append(Check("fail", "server", str(exc), fix))
            return checks
        meanwhile = f"{str(exc).rstrip('.')}; until it stops, runs use the warm server"
        checks.append(Check("warn", "server", meanwhile, fix))
    if serving is not None and answers:
        at = f"the warm server (pid {serving.pid}) answers at {serving.base_url}"
        checks.append(Check("ok", "endpoint", at))
    elif serving is not None:
        checks.append(
            Check(
                "warn",
                "endpoint",
                f"the warm server (pid {serving.pid}) at {serving.base_url} is not answering, "
                "so a run starts llama-server for itself",
                "`lathe local start` replaces it, `lathe local stop` stops it",
            )
        )
    else:
        other = f" for local/{model.name} (the warm one serves local/{warm.model})" if warm else ""
        checks.append(
            Check(
                "ok",
                "endpoint",
                f"no warm server{other}: a run starts llama-server for itself "
                "(`lathe local start` keeps one warm between runs)",
            )
        )
    if not live:
        return checks
    if serving is None or not answers:
        checks.append(
            Check(
                "warn",
                "live",
                "not checked: doctor starts no server to check",
                "run `lathe local start`, then `lathe doctor --live` again",
            )
        )
        return checks
    try:
        resolved = resolve_model(
            loaded.config,
            serving.wire_id,
            base_url_override=serving.base_url,
            fallback_profile=model.profile,
        )
    except UsageError as exc:
        checks.append(Check("fail", "live", str(exc), "correct the key named above"))
        return checks
    checks.append(_live_check(dataclasses.replace(resolved, provider="local", api_key_env=None)))
    return checks


def _trust_check(checks: list[Check], loaded) -> bool:
    """Whether the project file's settings that need trust whatever the sandbox (where
    the key goes among them; a verify command alone needs it only for a run without the
    sandbox, which doctor cannot foresee) are trusted; a failure naming them when not,
    and the key, endpoint and live checks are then left out."""
    from lathe.config.trust import untrusted_settings
    from lathe.home import lathe_home

    settings = untrusted_settings(loaded, lathe_home(), commands_sandboxed=True)
    if settings is None:
        return True
    checks.append(
        Check(
            "fail",
            "trust",
            f"the project file sets {', '.join(settings.keys)}, not trusted: `lathe run` "
            "refuses it, and the key, endpoint and live checks are skipped so the key is "
            "not sent where it points",
            "review the file, then run `lathe trust` in this workspace",
        )
    )
    return False


def _key_check(checks: list[Check], model) -> bool:
    from lathe.config import KEY_OVERRIDE_ENV, is_loopback

    problem = model.key_problem()
    if problem:  # as `lathe run` refuses it (ui.setup.endpoint_for)
        said, _, fix = problem.partition("; ")
        checks.append(Check("fail", "api key", said, fix))
        return False
    if os.environ.get(KEY_OVERRIDE_ENV):
        checks.append(Check("ok", "api key", f"{KEY_OVERRIDE_ENV} is set (overrides every key)"))
        return True
    if model.api_key_env is None:
        checks.append(Check("ok", "api key", f"{model.provider} needs no key"))
        return True
    if os.environ.get(model.api_key_env):
        checks.append(Check("ok", "api key", f"{model.api_key_env} is set"))
        return True
    if is_loopback(model.base_url):
        checks.append(
            Check("ok", "api key", f"{model.api_key_env} is not set; a local server needs none")
        )
        return True
    from lathe.local import DEFAULT_MODEL, is_installed

    if is_installed(DEFAULT_MODEL):
        checks.append(
            Check(
                "warn",
                "api key",
                f"{model.api_key_env} is not set, so lathe uses the local model "
                f"local/{DEFAULT_MODEL} unless you choose another with --model",
                f"export {model.api_key_env}=<your key> to use {model.provider}",
            )
        )
        return False
    checks.append(
        Check(
            "fail",
            "api key",
            f"{model.api_key_env} is not set, so {model.provider} cannot be used",
            f"export {model.api_key_env}=<your key> (or LATHE_API_KEY), "
            "or choose another model with --model",
        )
    )
    return False


def _endpoint_check(model) -> Check:
    import httpx

    from lathe.config.secrets import masked_url
    from lathe.llm.http_stream import credentials_as_header, url_for

    url = url_for(model.base_url, "models")
    bare, headers = credentials_as_header(url, _auth_headers(model))
    try:
        response = httpx.get(bare, headers=headers, timeout=_ENDPOINT_TIMEOUT_S)
    except httpx.HTTPError as exc:
        return Check(
            "fail",
            "endpoint",
            f"cannot reach {model.shown_url}: {_reason(exc)}",
            f"start the server, or {model.base_url_fix} if the address is wrong",
        )
    if response.status_code in (401, 403):
        return Check(
            "fail",
            "endpoint",
            f"{model.shown_url} rejected the key (HTTP {response.status_code})",
            f"check that {model.api_key_env or 'LATHE_API_KEY'} holds a valid key for "
            f"{model.provider}",
        )
    if response.status_code == 404:
        return Check(
            "warn",
            "endpoint",
            f"{model.shown_url} answers but lists no models (HTTP 404)",
            "run `lathe doctor --live` to send a one-token request instead",
        )
    if response.status_code >= 400:
        return Check(
            "fail" if response.status_code >= 500 else "warn",
            "endpoint",
            f"GET {masked_url(url)} answered HTTP {response.status_code}",
            "try again later, or run `lathe doctor --live`",
        )
    ids = _model_ids(response)
    if ids and model.model_id not in ids:
        return Check(
            "warn",
            "endpoint",
            f"{model.shown_url} answers, but does not list {model.model_id!r} "
            f"({plural(len(ids), 'model')} listed)",
            "check the model id; `lathe config show` lists the catalog",
        )
    return Check(
        "ok", "endpoint", f"{model.shown_url} answers ({plural(len(ids), 'model')} listed)"
    )


def _auth_headers(model) -> dict[str, str]:
    headers = dict(model.headers)
    key = model.api_key()
    if model.kind == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _model_ids(response) -> list[str]:
    try:
        data = response.json().get("data", [])
        return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]
    except (ValueError, AttributeError):
        return []


def _reason(exc: Exception) -> str:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {_ENDPOINT_TIMEOUT_S:g} s"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or host not found"
    return f"{type(exc).__name__}: {exc}"


def _live_check(model) -> Check:
    import asyncio
    import time

    from lathe.errors import ProviderError, UsageError
    from lathe.llm.base import Completed, ModelRequest
    from lathe.llm.registry import make_provider
    from lathe.types import UserMessage
    from lathe.ui.setup import endpoint_for

    async def ask() -> str:
        provider = make_provider(endpoint_for(model))
        try:
            request = ModelRequest(
                system="Answer with one word.",
                messages=[UserMessage(content="Say OK.")],
                tools=[],
                max_output_tokens=1,
            )
            async for event in provider.stream(request):
                if isinstance(event, Completed):
                    return event.message.text
            return ""
        finally:
            await provider.aclose()

    started = time.monotonic()
    try:
        text = asyncio.run(asyncio.wait_for(ask(), _LIVE_TIMEOUT_S))
    except (ProviderError, UsageError) as exc:
        return Check("fail", "live", str(exc), "fix the problem named above and try again")
    except TimeoutError:
        return Check(
            "fail", "live", f"no reply within {_LIVE_TIMEOUT_S:g} s", "check the server's load"
        )
    elapsed = time.monotonic() - started
    return Check("ok", "live", f"{model.model_id} replied {text.strip()[:20]!r} in {elapsed:.1f} s")


def _rg_check() -> Check:
    from lathe.errors import ToolError
    from lathe.tools.grep import rg_binary

    try:
        binary = rg_binary()
    except ToolError:
        return Check(
            "fail",
            "rg",
            "ripgrep is not installed: the grep and glob tools cannot run",
            "pip install 'ripgrep==14.1.0' into lathe's environment, or apt-get install ripgrep",
        )
    return _command_check("rg", [binary, "--version"], "reinstall ripgrep")


def _command_check(name: str, argv: list[str], fix: str) -> Check:
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        return Check("fail", name, f"{argv[0]} is not installed or not on PATH", fix)
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("fail", name, f"{argv[0]} does not run: {exc}", fix)
    if result.returncode != 0:
        error = (result.stderr or result.stdout).strip().splitlines()
        return Check("fail", name, f"{argv[0]} failed: {error[0] if error else 'no output'}", fix)
    version = result.stdout.strip().splitlines()[0] if result.stdout.strip() else "runs"
    return Check("ok", name, version)


def _bwrap_check() -> Check:
    from lathe.exec.sandboxes import sandbox_status

    status = sandbox_status("bubblewrap")  # probed once: the sandbox line asks again
    if status.available:
        return Check("ok", "bwrap", status.message)
    return Check(
        "warn",
        "bwrap",
        "no sandbox: headless runs refuse commands, interactive ones ask before each",
        status.message,
    )


def _gvisor_check(*, chosen: bool) -> Check:
    """Whether gVisor can start a sandbox here, and why not; only a failure when the
    configuration chooses it."""
    from lathe.exec.sandboxes import sandbox_status

    status = sandbox_status("gvisor")
    if status.available:
        return Check("ok", "gvisor", status.message)
    if chosen:
        return Check(
            "fail",
            "gvisor",
            "sandbox = gvisor, but gVisor cannot run here: headless runs refuse commands, "
            "interactive ones ask before each",
            status.message,
        )
    return Check("ok", "gvisor", f"not usable here (optional, --sandbox gvisor): {status.message}")


def _container_check(loaded) -> Check:
    """Whether the [container] table's engine starts its container here."""
    from lathe.exec.sandboxes import configured_sandbox, sandbox_status

    status = sandbox_status(*configured_sandbox(loaded.config))
    if status.available:
        return Check("ok", "container", status.message)
    return Check(
        "fail", "container", "sandbox = container, but no container starts here",
        status.message,
    )  # fmt: skip


def _sandbox_view_checks(workspace: Path, loaded) -> list[Check]:
    """What a sandboxed command sees, and what the read rules cannot hide."""
    from lathe.errors import UsageError
    from lathe.patterns import PathPatterns
    from lathe.policy.history import denied_in_history
    from lathe.policy.rules import RuleSet

    permissions = loaded.config.permissions
    warned: list[str] = []
    try:  # as a run reads them: a rule it stops on fails here too
        rules = RuleSet.from_strings(
            allow=permissions.allow, ask=permissions.ask, deny=permissions.deny
        )
        from lathe.tools.base import ToolRegistry
        from lathe.tools.builtin import builtin_tools
        from lathe.ui.safety import check_rule_tools

        check_rule_tools(rules, loaded.config.hooks, ToolRegistry(builtin_tools()), warned.append)
    except UsageError as exc:
        return [Check("fail", "rules", str(exc), "correct the rule in permissions.allow/ask/deny")]
    warnings = [Check("warn", "rules", message) for message in warned]
    if loaded.origin("permissions.approval") != "default" and permissions.approval == "full":
        return [
            *warnings,
            Check(
                "ok",
                "sandbox",
                "no sandbox: permissions.approval is full, so commands run on this machine "
                "as you (only the command guard's deny list stands)",
            ),
        ]
    view = _sandbox_check(loaded.config)
    denied = rules.denied_read_patterns()
    if not denied:
        return [*warnings, view]
    hidden = PathPatterns(denied).existing(workspace)
    limits = (
        "hidden from read, grep and glob, and from sandboxed commands when each starts; "
        "not covered: a file created after a command starts, a copy under another name, "
        "and commands in --approval full (no sandbox: only paths a command names are checked)"
    )
    checks = [*warnings, view, Check("ok", "rules", f"read denied for {', '.join(denied)} "
                          f"({plural(len(hidden), 'path')} here): {limits}")]  # fmt: skip
    in_history = denied_in_history(workspace, denied)
    if in_history is None:
        why = "git could not say whether files a read rule denies are in the repository"
        fix = "run `git status` here to see what git complains about"
    elif in_history:
        denied_there = ", ".join(in_history[:3])
        why = f"{denied_there} (read denied) is in the git history (git show would print it)"
        fix = "remove it from the history (git filter-repo) to give commands git back"
    else:
        return checks
    checks.append(Check("warn", "history", f"{why}, so sandboxed commands run without .git", fix))
    return checks


def _sandbox_check(config) -> Check:
    """What a command sees in the sandbox the config chooses; that there is none when
    that sandbox cannot start (its own check above says why)."""
    from lathe.exec.sandboxes import configured_sandbox, sandbox_status
    from lathe.exec.view import tool_paths

    engine, container = configured_sandbox(config)
    if not sandbox_status(engine, container).available:
        return Check(
            "warn",
            "sandbox",
            f"none: the {engine} sandbox cannot start here (see above), so headless runs "
            "refuse commands and interactive ones ask before each, then run it unsandboxed",
        )
    if container is not None:
        root = (
            f"the image {container.image}"
            if container.rootfs is None
            else f"the root folder {container.rootfs} through an overlay (they read what it "
            "holds; what they write there stays in the container)"
        )
        seen = (
            f"commands run in a {container.engine} container whose root is {root}; none of "
            "this machine's tool folders"
        )
    else:
        tools = ", ".join(str(p) for p in tool_paths(Path.home()))
        seen = (
            "commands see the system read-only (/usr, /etc, /opt, ...), these tool folders "
            f"read-only: {tools or 'none'}"
        )
    network = " (network allowed by permissions.sandbox.network)"
    return Check(
        "ok",
        "sandbox",
        f"{seen}; the workspace read-write except .git and .lathe; a private /tmp; no network"
        + (network if config.permissions.sandbox.network else ""),
    )


def _home_check() -> Check:
    from lathe.home import lathe_home

    home = lathe_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "fail",
            "home",
            f"LATHE_HOME {home} is not writable: {exc.strerror or exc}",
            "set LATHE_HOME to a writable directory, or fix the permissions of this one",
        )
    return Check("ok", "home", f"{home} is writable")
