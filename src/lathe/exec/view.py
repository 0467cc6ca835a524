"""What a sandboxed command sees, decided once for every sandbox lathe can use.

`sandbox_view` turns the workspace, the rules and this machine's toolchains into a
`SandboxView`: the system directories and toolchains read-only, the workspace writable
except the entries kept read-only, the paths denied for reading masked, a private /tmp,
no network unless asked for. Each sandbox renders the same view its own way (bubblewrap
as command-line mounts, gVisor as an OCI bundle), so the two cannot drift apart on what
a command may read or write.

Deny patterns are matched against the workspace when the view is built, that is when a
command starts: a file created later escapes them (the executors move aside what a
command creates under an edit-denied name; see `lathe.exec.sandboxed`).

lathe's own folders (its data dir, where checkpoint stores, sessions and logs live, and
its user config) are never a command's, wherever they lie: inside the workspace they
are masked like a denied path, after the workspace is bound (a command that wrote a
clean filter into a checkpoint store had lathe's own `git add` run it on the host). So
are the usual credential folders of the home directory when the workspace holds it
(`lathe run -C ~`); there what runs on the host later (shell startup files, git's config,
~/.local/bin) is kept read-only, or moved aside when a command makes it. A workspace
whose `.git` is a file (a linked worktree, a submodule) gets the git dir it names, and a
worktree's common one, read-only wherever they lie, when that git dir names the
workspace back. A mask inside a folder a rule already hides is left out.

git's config in the home folder is shown as it is only when nothing in it is a
credential; otherwise a copy without those entries is shown in its place (`copies`), so
git inside still knows the user's name, email and aliases and no command reads a token
an `insteadOf` URL or an `extraheader` holds.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.exec.env import holds_secret_value
from lathe.patterns import compiled

# Read-only from the home directory, so the usual toolchains work: interpreters and
# their packages, and the files git reads beside its config. Credentials (~/.ssh, ~/.aws,
# ~/.netrc) stay out. Not all of ~/.local: its share/ and state/ hold keyrings and shell
# histories. Not all of ~/.config/git: its credential store, and files a config
# includes, may hold tokens.
HOME_TOOLS = (
    ".pyenv", ".local/bin", ".local/lib", ".local/share/pipx", ".local/share/uv", ".cargo",
    ".rustup", ".nvm", ".volta", ".bun", ".deno", ".config/git/ignore",
    ".config/git/attributes",
)  # fmt: skip
# Stored credentials inside those toolchain folders: masked like a denied path (cargo's
# crates.io token, uv's index passwords were readable).
HOME_CREDENTIALS = (
    ".cargo/credentials", ".cargo/credentials.toml", ".local/share/uv/credentials",
)  # fmt: skip
# Stored credentials in the home folder, masked when the workspace holds them (started in
# ~ or above it); elsewhere nothing shows them.
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker", ".kube",
    ".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials", ".config/git/credentials",
    ".password-store", ".local/share/keyrings", ".vault-token",
)  # fmt: skip
# What in the home folder runs on the host later, kept when the workspace holds it
# (`home_in_workspace`): shell startup files, git's config, programs and user site-packages,
# session autostarts and user services, editors' init code, ~/.ssh. The rest stays
# writable: a project in $HOME (HOME=/app in a container) has its .venv, .tox and caches.
HOME_PROTECTED = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
    ".config/fish", ".gitconfig", ".config/git", ".local/bin", ".local/lib",
    ".config/autostart", ".config/systemd", ".config/environment.d", ".vimrc", ".vim",
    ".config/nvim", ".emacs", ".emacs.d", ".ssh", ".pam_environment", ".xprofile",
    ".xinitrc", ".xsession", ".xsessionrc",
)  # fmt: skip
# git's own config, shown as it is or as a copy without its credentials (`_git_configs`).
GIT_CONFIGS = (".gitconfig", ".config/git/config")
# Names of git settings that hold a secret whatever their value: sendemail.smtpPass,
# github.token, hub.oauthtoken (not core.askPass, a program); http.*.extraHeader too.
# A credential helper names a program (store, osxkeychain, `!gh auth git-credential`),
# no secret: the credentials it keeps live elsewhere (~/.git-credentials, masked). One
# that is a shell snippet printing a password written in it is a credential.
_GIT_SECRET_NAME = re.compile(r"(?<!ask)pass(word)?$|token|secret|apikey|privatekey")
_HELPER_PASSWORD = re.compile(r"\b(password|oauth_refresh_token)=(?![\"']?\$(\w+|\{\w+\})\b)")
SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ENV_PREFIXES = ("VIRTUAL_ENV", "CONDA_PREFIX")
# Binding these read-only would undo the sandbox's own root or its private /tmp.
_NEVER_BOUND = frozenset({Path("/"), Path("/tmp")})


@dataclass(frozen=True)
class SandboxView:
    """The file system a sandboxed command gets, in mount order (later mounts land on
    top of earlier ones).

    `system`: (directory, symlink target or None) for each system directory present
    here; a symlinked one (Debian's /bin -> usr/bin) is recreated as the same link.
    `tools`: directories outside the system ones shown read-only. `workspace`: shown
    writable, at its own path. `read_only`: paths inside the workspace shown read-only,
    and the git dirs a `.git` file names (that name it back) wherever they lie.
    `hidden`: paths shown empty and unreadable (a folder as an empty one, a file as an
    empty file nobody may open), lathe's own folders inside the workspace among them,
    last. `covered`: folders inside the tools shown as empty ones, the workspace still
    bound on top (lathe's data dir under ~/.local holds every session, patch and
    subagent worktree). `copies`: (where, the file shown there) for files lathe wrote in
    place of the user's, shown read-only on top of the tools: git's config without its
    credentials. A private, empty /tmp lies under all of them."""

    workspace: Path
    cwd: Path
    network: bool
    system: tuple[tuple[str, str | None], ...]
    tools: tuple[Path, ...]
    read_only: tuple[Path, ...]
    hidden: tuple[Path, ...]
    covered: tuple[Path, ...] = ()
    copies: tuple[tuple[Path, Path], ...] = ()


def sandbox_view(
    workspace: Path,
    cwd: Path,
    *,
    network: bool,
    read_only: Sequence[str] = (".git", ".lathe"),
    deny_read: Sequence[str] = (),
    deny_write: Sequence[str] = (),
    home: Path | None = None,
    extra_read_only: Sequence[Path] = (),
    hide_git: bool = False,
) -> SandboxView:
    """The view for a command in `cwd`. `read_only` names workspace entries; `deny_read`
    and `deny_write` are patterns in the dialect of `lathe.patterns`, matched against
    every file and folder in the workspace now; `hide_git` hides the repositories
    themselves, the workspace's own and every one nested in it."""
    workspace = Path(os.path.abspath(workspace))
    home = home or Path.home()
    system = []
    for directory in SYSTEM_DIRS:
        path = Path(directory)
        if path.is_symlink():
            system.append((directory, os.readlink(path)))
        elif path.exists():
            system.append((directory, None))
    kept = [workspace / name for name in read_only]
    kept += compiled(tuple(deny_write)).existing(workspace)
    shown_read_only = [_mounted(p, workspace, inside_only=True) for p in kept]
    if not hide_git:
        shown_read_only += _named_git_dirs(workspace, home, writable=".git" not in read_only)
    hidden = compiled(tuple(deny_read)).existing(workspace)
    if hide_git:  # nested ones too: a submodule's objects lie in the outer .git
        hidden += compiled((".git",)).existing(workspace)
    shown_git, git_copies = _git_configs(home)
    tools = (*tool_paths(home, extra_read_only), *shown_git)
    hidden += [home / name for name in HOME_CREDENTIALS]  # `_mounted`: those there only
    if (home_inside := home_in_workspace(workspace, home)) is not None:
        protected = (home_inside / name for name in HOME_PROTECTED)
        shown_read_only += [_mounted(p, workspace, inside_only=True) for p in protected]
    denied = [p for p in dict.fromkeys(_mounted(p, workspace) for p in hidden) if p is not None]
    # A mask inside a folder already hidden shows nothing more, and bwrap cannot make
    # its mount point in the empty read-only folder: every command failed.
    masked = _outside(_kept_out(workspace, home), denied, strict=True)
    return SandboxView(
        workspace=workspace,
        cwd=cwd,
        network=network,
        system=tuple(system),
        tools=tools,
        covered=_covered(tools),
        copies=tuple(git_copies),
        read_only=_outside(dict.fromkeys(shown_read_only), masked),
        hidden=(*_outside(denied, masked), *masked),
    )


def _outside(
    paths: Iterable[Path | None], masked: Sequence[Path], *, strict: bool = False
) -> tuple[Path, ...]:
    """`paths` but those in or under a masked one (with `strict`, under one only): a
    mount inside a folder already masked (empty and unreadable) cannot be made, and
    would show nothing anyway."""
    return tuple(
        p
        for p in paths
        if p is not None and not any(p.is_relative_to(m) and (p != m or not strict) for m in masked)
    )


def _kept_out(workspace: Path, home: Path) -> tuple[Path, ...]:
    """What the workspace holds that no command may see: lathe's data dir and user
    config, and the home folder's credentials (`HOME_SECRETS`), each where a mount over
    it must land (`_mounted`). lathe's folders are made when missing, so a command
    cannot make them first (a checkpoint store's config, a config's hooks: both end up
    run on the host); so is the folder of a missing file LATHE_CONFIG names, or the file
    itself, empty, when its folder is the workspace."""
    from lathe.config.loader import user_config_path
    from lathe.home import lathe_home

    config = Path(os.path.abspath(user_config_path()))
    named, missing = bool(os.environ.get("LATHE_CONFIG")), not config.exists()
    # A folder LATHE_CONFIG's file lies in is the user's: masked only while that is missing.
    made = [lathe_home(), config.parent] if missing or not named else [lathe_home()]
    if named and missing and _inside(config, workspace) and not _inside(config.parent, workspace):
        with contextlib.suppress(OSError):  # in the workspace itself: mask an empty file
            os.close(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    found = []
    for path in (*made, config, *(home / name for name in HOME_SECRETS)):
        inside = _inside(Path(os.path.abspath(path)), workspace)
        if inside is None:
            continue
        if path in made:
            with contextlib.suppress(OSError):
                inside.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = _mounted(inside, workspace)
        if target is not None and (target == inside or _inside(target, workspace)):
            found.append(target)
    return _outside(dict.fromkeys(found), found, strict=True)  # the config in its folder


def home_in_workspace(workspace: Path, home: Path | None = None) -> Path | None:
    """Where the workspace shows the home folder when it holds it (`-C ~`, or above it);
    None elsewhere (the home folder is not mounted at all). There `HOME_PROTECTED`'s
    entries are kept: those there are shown read-only (a command had appended to
    ~/.bashrc and ~/.gitconfig); those missing cannot be mounted (bwrap would make each
    on the host as its mount point), so the executor moves aside what a command makes
    there (`lathe.exec.sandboxed`): one had written a ~/.gitconfig with a core.fsmonitor."""
    root = Path(os.path.realpath(workspace))
    real_home = Path(os.path.realpath(home or Path.home()))
    return workspace / real_home.relative_to(root) if real_home.is_relative_to(root) else None


def _inside(path: Path, workspace: Path) -> Path | None:
    """Where `path` (or where it leads, through links on its way) lies in the workspace
    as a command sees it; None outside it, and for the workspace itself: masking lathe's
    data dir when that holds the workspace (a subagent's worktree) would hide it all."""
    if path != workspace and path.is_relative_to(workspace):
        return path
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(workspace))
    if real != root and real.is_relative_to(root):
        return workspace / real.relative_to(root)
    return None


def _named_git_dirs(workspace: Path, home: Path, *, writable: bool) -> list[Path]:
    """The git dir a `.git` file in the workspace names (a linked worktree's, a
    submodule's) and, for a worktree, the common one its `commondir` names: git inside
    finds no repository without them. Outside the workspace they are shown read-only
    whatever the rules; inside it, like `.git` (none when `writable`).

    Only a git dir that names the workspace back is one: a `.git` file is the
    workspace's to write (a tarball ships one), and `gitdir: /root` had shown /root. A
    worktree's common dir is the one holding its git dir in `worktrees/`. None is shown
    that is or holds the workspace, the home folder or lathe's folders, or lies in
    lathe's data dir."""
    dot_git = workspace / ".git"
    if not dot_git.is_file():
        return []
    try:
        git_dir = _path_in(dot_git, prefix="gitdir:")
        if git_dir is None or not git_dir.is_dir():
            return []
        if _same(_path_in(git_dir / "gitdir"), dot_git):  # a linked worktree
            common = _path_in(git_dir / "commondir")
            owns = common is not None and _same(git_dir.parent, common / "worktrees")
            found = [common, git_dir] if owns else [git_dir]
        elif _same(_submodule_worktree(git_dir), workspace):
            found = [git_dir]
        else:
            return []
    except OSError:
        return []
    found = [p for p in found if p is not None and p.is_dir() and _may_show(p, workspace, home)]
    return [p for p in found if not (writable and p.is_relative_to(workspace))]


def _same(path: Path | None, other: Path) -> bool:
    """Whether `path` leads where `other` does."""
    return path is not None and os.path.realpath(path) == os.path.realpath(other)


def _submodule_worktree(git_dir: Path) -> Path | None:
    """Where `core.worktree` in `git_dir`'s config points (relative to `git_dir`, as git
    reads it), which git sets in a submodule's git dir; None when it sets none. git
    reads only that file and runs nothing of it (no includes: they could name any file).
    Kept while the config is unchanged, as `_judged` keeps a config's judgement."""
    config = git_dir / "config"
    stamp = _stamp(config)
    if stamp is not None and _worktrees.get(config, (None,))[0] == stamp:
        return _worktrees[config][1]
    try:
        found = subprocess.run(
            ["git", "config", "--file", str(git_dir / "config"), "--no-includes", "--get",
             "core.worktree"],
            capture_output=True, cwd="/", timeout=10, check=False,
            env={"PATH": os.environ.get("PATH", os.defpath), "GIT_CONFIG_NOSYSTEM": "1"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    value = found.stdout.decode("utf-8", "surrogateescape").removesuffix("\n")
    worktree = Path(os.path.normpath(git_dir / value)) if found.returncode == 0 and value else None
    if stamp is not None:
        _worktrees[config] = (stamp, worktree)
    return worktree


_worktrees: dict[Path, tuple[tuple[int, ...], Path | None]] = {}


def _may_show(git_dir: Path, workspace: Path, home: Path) -> bool:
    """Whether a git dir may be bound read-only: not when it is or holds the workspace
    (the bind would lie over it), the home folder (and so / too) or lathe's folders, nor
    when it lies in lathe's data dir."""
    from lathe.config.loader import user_config_path
    from lathe.home import lathe_home

    real = Path(os.path.realpath(git_dir))
    data = Path(os.path.realpath(lathe_home()))
    kept = (workspace, home, data, user_config_path())
    held = any(Path(os.path.realpath(p)).is_relative_to(real) for p in kept)
    return not held and not real.is_relative_to(data)


def _path_in(file: Path, *, prefix: str = "") -> Path | None:
    """The path `file`'s first line holds after `prefix`, relative to its folder (as git
    reads a `.git` file and `commondir`); None when the file is missing or says other."""
    if not file.is_file():
        return None
    line = file.read_text(encoding="utf-8", errors="replace").partition("\n")[0].strip()
    if not line.startswith(prefix) or not line.removeprefix(prefix).strip():
        return None
    return Path(os.path.normpath(file.parent / line.removeprefix(prefix).strip()))


def _covered(tools: Sequence[Path]) -> tuple[Path, ...]:
    """lathe's data dir when a tool folder would show it (the default one lies under
    ~/.local): other sessions, patches and subagents' worktrees are no command's."""
    from lathe.home import lathe_home

    data = Path(os.path.abspath(lathe_home()))
    return (data,) if any(data.is_relative_to(t) and data != t for t in tools) else ()


def tool_paths(home: Path, extra: Sequence[Path] = ()) -> list[Path]:
    """The directories outside the system ones that commands see read-only: this
    Python's prefixes, the home directory's toolchains, every PATH entry."""
    candidates = [Path(sys.base_prefix), Path(sys.prefix), *extra]
    candidates += [home / name for name in HOME_TOOLS]
    candidates += [Path(os.environ[v]) for v in _ENV_PREFIXES if os.environ.get(v)]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        # A relative entry (`.`) is relative to wherever lathe was started: home, say.
        if entry and os.path.isabs(entry):
            # A virtualenv's bin/ needs the rest of the virtualenv (pyvenv.cfg, lib/), and
            # a version manager's shims/ (pyenv, rbenv, asdf) the rest of its root: each
            # shim runs its libexec/, which runs versions/X/bin/.
            path = Path(entry)
            whole = (path.parent / "pyvenv.cfg").is_file() or path.name == "shims"
            candidates.append(path.parent if whole else path)
    system = tuple(Path(d) for d in SYSTEM_DIRS)
    chosen: list[Path] = []
    for path in sorted({Path(os.path.abspath(p)) for p in candidates}, key=lambda p: len(p.parts)):
        if not path.exists() or any(path.is_relative_to(s) for s in system):
            continue
        if any(path.is_relative_to(c) for c in chosen) or path in _NEVER_BOUND:
            continue
        if home.is_relative_to(path):  # home itself on PATH would show ~/.ssh and all
            continue
        chosen.append(path)
    return chosen


def _git_configs(home: Path) -> tuple[list[Path], list[tuple[Path, Path]]]:
    """git's config files in `home`: those shown as they are, and (where, copy) for
    those shown as a copy without their credentials. One git cannot read is neither."""
    shown, copies = [], []
    for path in (home / name for name in GIT_CONFIGS):
        shown_as = _without_credentials(path) if path.is_file() else None
        if shown_as == path:
            shown.append(path)
        elif shown_as is not None:
            copies.append((path, shown_as))
    return shown, copies


# Each config's judgement, kept while the file is unchanged: the view is built for every
# command, and reading a config takes a git process.
_judged: dict[Path, tuple[tuple[int, ...], Path | None]] = {}


def _stamp(path: Path) -> tuple[int, ...] | None:
    """What tells a file changed since it was last read; None when it cannot be read."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _without_credentials(path: Path) -> Path | None:
    """`path` when no entry in it is a credential, else a copy without those entries
    (in lathe's scratch folder, removed when lathe exits); None when git cannot read it."""
    stamp = _stamp(path)
    if stamp is None:
        return None
    if path in _judged and _judged[path][0] == stamp:
        return _judged[path][1]
    try:  # git reads it as git will: quoting, continued lines, comments
        listed = subprocess.run(
            ["git", "config", "--file", str(path), "--no-includes", "--list", "-z"],
            capture_output=True, cwd="/", timeout=10, check=True,
            env={"PATH": os.environ.get("PATH", os.defpath), "GIT_CONFIG_NOSYSTEM": "1"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        _judged[path] = (stamp, None)
        return None
    entries = []
    for item in listed.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]:
        key, newline, value = item.partition("\n")
        entries.append((key, value if newline else None))
    kept = [(key, value) for key, value in entries if not _git_credential(key, value)]
    shown_as = path if len(kept) == len(entries) else _written_config(kept)
    _judged[path] = (stamp, shown_as)
    return shown_as


def _git_credential(key: str, value: str | None) -> bool:
    """Whether a git setting (`section.subsection.name`, as `git config --list` names
    it) is a credential: by its name, or a secret in its subsection (a URL's token) or
    its value (`lathe.exec.env.holds_secret_value`)."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    return (
        (
            section == "credential"
            and name == "helper"
            and bool(_HELPER_PASSWORD.search(value or ""))
        )
        or name == "extraheader"
        or bool(_GIT_SECRET_NAME.search(name))
        or holds_secret_value(subsection)
        or holds_secret_value(value or "")
    )


def _written_config(entries: Sequence[tuple[str, str | None]]) -> Path:
    """A git config file holding `entries`, in order, each value quoted. One file for
    each content, never rewritten: a command still running keeps the one it was shown."""
    lines, header = [], ""
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, dot, name = rest.rpartition(".")
        wanted = f'[{section} "{_quoted(subsection)}"]' if dot else f"[{section}]"
        if wanted != header:
            lines.append(header := wanted)
        lines.append(f"\t{name}" if value is None else f'\t{name} = "{_quoted(value)}"')
    data = "\n".join([*lines, ""]).encode("utf-8", "surrogateescape")
    copy = _copies_folder() / f"gitconfig-{hashlib.sha256(data).hexdigest()[:16]}"
    if not copy.exists():
        from lathe.atomic_write import write_atomic

        write_atomic(copy, data)  # threads may race: each renames a whole file in place
    return copy


def _quoted(text: str) -> str:
    """`text` as it goes between double quotes in a git config."""
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t"), ("\b", "\\b")):
        text = text.replace(raw, escaped)
    return text


@functools.lru_cache(maxsize=1)
def _copies_folder() -> Path:
    """Where this process writes the files shown in place of the user's, removed when
    it exits (every sandbox it bound one into has ended)."""
    from lathe.exec.scratch import scratch_folder

    folder = scratch_folder("home-copies", reachable=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _mounted(path: Path, workspace: Path, *, inside_only: bool = False) -> Path | None:
    """What a mount over `path` must cover: the path itself, or for a symlink the file
    it leads to (a mount onto a link lands on its target, and a masked link must hide
    what it shows). None when there is nothing there, or, with `inside_only`, when the
    target lies outside the workspace: a read-only bind of it would show it."""
    if not path.is_symlink():
        return path if path.exists() else None
    target = path.resolve()
    if not target.exists() or (inside_only and not target.is_relative_to(workspace)):
        return None
    return target


@functools.lru_cache(maxsize=1)
def unreadable_file() -> Path:
    """An empty file nobody may open; without capabilities not even root inside. One a
    process, removed when it exits (every sandbox it bound the file into has ended)."""
    from lathe.exec.scratch import scratch_folder

    folder = scratch_folder("mask", reachable=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder) / "denied"
    path.touch(mode=0)
    path.chmod(0)
    return path
