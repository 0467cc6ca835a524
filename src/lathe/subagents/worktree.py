"""A child agent's own copy of the parent's workspace, and its changes coming back.

`create_worktree` gives a child a folder under lathe's data dir (never inside the user's
repository) holding what the parent sees at that moment: for a workspace that is a git
repository's top level, a local clone checked out at the parent's HEAD with the parent's
uncommitted changes and untracked files laid over it (ignored files stay behind); for
any other workspace, a copy. Either way the child's folder is a repository of its own
whose first commit, `base`, is that state, so the child's changes are exactly the
difference from `base`. Nothing is written into the user's `.git`: no worktree metadata,
no refs, no config. Creations for one workspace are serialised by a lock.

`child_changes` is that difference, as files with line counts and as a binary git
patch; `apply_patch` lands it in the
parent's workspace only when it applies cleanly as a whole (`git apply --check` first),
and otherwise leaves the workspace as it was and keeps the patch file for the user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lathe.checkpoint.shadow import global_excludes_file, isolated_git_environment
from lathe.errors import LatheError, UsageError
from lathe.file_lock import FileLock
from lathe.home import project_slug

_BASE_MESSAGE = "lathe: the parent's workspace when the child started"


@dataclass(frozen=True)
class Worktree:
    """A child's workspace: `path`, a repository whose commit `base` holds the parent's
    state at creation; `source` is the parent's workspace."""

    path: Path
    base: str
    source: Path


@dataclass(frozen=True)
class FileStat:
    """One file a child changed: lines added and deleted (None for a binary file)."""

    path: str
    added: int | None
    deleted: int | None


@dataclass(frozen=True)
class Applied:
    """The outcome of `apply_patch`: `applied` False means the workspace is untouched and
    `reason` says why (git's own words)."""

    applied: bool
    patch_file: Path
    reason: str = ""


def worktrees_root(workspace: Path, home: Path) -> Path:
    return home / "worktrees" / project_slug(workspace)


def create_worktree(workspace: Path, home: Path, name: str) -> Worktree:
    """A new worktree named `name` (unique per workspace) holding the parent's state now."""
    workspace = workspace.resolve()
    root = worktrees_root(workspace, home)
    root.mkdir(parents=True, exist_ok=True)
    destination = root / name
    lock = FileLock(root / ".create.lock")
    lock.acquire(record=f"creating {name}\n")
    try:
        if destination.exists():
            raise LatheError(f"worktree {destination} already exists; choose another name")
        head = _repository_head(workspace)
        if head is None:
            _copy_tree(workspace, destination)
        else:
            _clone_with_changes(workspace, destination, head)
        base = _commit_everything(destination, _BASE_MESSAGE, force=head is None)
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise
    finally:
        lock.release()
    return Worktree(path=destination, base=base, source=workspace)


@dataclass(frozen=True)
class Changes:
    """What a child changed since `base`: the files with line counts, and all of it as a
    binary patch (b"" when nothing); `left_behind`, files it made at paths the
    workspace's ignore rules ignore, which no patch carries (caches left out)."""

    files: tuple[FileStat, ...]
    patch: bytes
    left_behind: tuple[str, ...] = ()


# Folders of files no one wrote on purpose: what running code or tests leaves.
# lathe's spill folder in the child's folder (`ui.wiring.spill_dir`): lathe's, not the
# child's work (every child had been told it made `.lathe/tmp/.gitignore`).
_LATHES_OWN = ".lathe/tmp/"
_CACHES = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules", ".tox",
     ".venv", "venv", ".cache", ".hypothesis"}
)  # fmt: skip


def child_changes(tree: Worktree) -> Changes:
    """The child's changes, everything in its folder staged once."""
    _stage_everything(tree)
    counts = _git(tree.path, "diff", "--cached", "--numstat", "--no-renames", "-z", tree.base)
    files = []
    for record in counts.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        added, deleted, path = record.split("\t", 2)
        files.append(
            FileStat(
                path=path,
                added=None if added == "-" else int(added),
                deleted=None if deleted == "-" else int(deleted),
            )
        )
    patch = _git(tree.path, "diff", "--cached", "--binary", "--no-renames", tree.base)
    return Changes(tuple(files), patch, _left_behind(tree))


def _left_behind(tree: Worktree) -> tuple[str, ...]:
    """The files no patch carries: those at ignored paths in the child's folder, caches
    left out (a clone holds none of the parent's ignored files, so each is the child's
    own; a copy has no ignore rules: everything in it is staged), and those it changed
    inside a submodule (git stages none of a submodule's files)."""
    if not (tree.source / ".git").exists():
        return ()
    listing = _git(tree.path, *_user_ignores(), "ls-files", "--others", "--ignored",
                   "--exclude-standard", "-z")  # fmt: skip
    paths = listing.decode("utf-8", "surrogateescape").split("\0")
    ignored = [
        p
        for p in paths
        if p and not _CACHES.intersection(Path(p).parts[:-1]) and not p.startswith(_LATHES_OWN)
    ]
    inside = [p for sub in _submodules(tree.path) for p in _changed_in(tree, sub)]
    return tuple(sorted({*ignored, *inside}))


def _submodules(repository: Path) -> list[str]:
    """The paths of the submodules `repository`'s index holds (gitlinks)."""
    staged = _git(repository, "ls-files", "--stage", "-z").decode("utf-8", "surrogateescape")
    return [
        entry.split("\t", 1)[1]
        for entry in staged.split("\0")
        if entry.startswith("160000 ") and "\t" in entry
    ]


def _changed_in(tree: Worktree, submodule: str) -> list[str]:
    """The files under `submodule` in the child's folder that differ from the parent's
    (made, changed or removed)."""

    def files(root: Path) -> dict[str, bytes]:
        found = {}
        for path in root.rglob("*") if root.is_dir() else ():
            relative = path.relative_to(root)
            if relative.parts[0] != ".git" and (path.is_file() or path.is_symlink()):
                found[relative.as_posix()] = path.read_bytes() if path.is_file() else b""
        return found

    before, after = files(tree.source / submodule), files(tree.path / submodule)
    differ = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    return [f"{submodule}/{p}" for p in sorted(differ)]


def apply_patch(workspace: Path, patch: bytes, patch_file: Path) -> Applied:
    """Write `patch` to `patch_file`, then apply it to `workspace` if, and only if, all
    of it applies cleanly."""
    patch_file.parent.mkdir(parents=True, exist_ok=True)
    patch_file.write_bytes(patch)
    if not patch:
        return Applied(True, patch_file)
    check = _apply(workspace, patch_file, "--check")
    if check.returncode != 0:
        reason = check.stderr.decode("utf-8", "replace").strip() or "git apply --check failed"
        return Applied(False, patch_file, reason)
    done = _apply(workspace, patch_file)
    if done.returncode != 0:  # checked a moment ago: only a concurrent change gets here
        return Applied(False, patch_file, done.stderr.decode("utf-8", "replace").strip())
    return Applied(True, patch_file)


def remove_worktree(tree: Worktree) -> None:
    shutil.rmtree(tree.path, ignore_errors=True)


def _repository_head(workspace: Path) -> str | None:
    """The HEAD commit when `workspace` is the top level of a git repository with at
    least one commit; None otherwise (a copy is made instead)."""
    try:
        top = _git(workspace, "rev-parse", "--show-toplevel", own=False).decode().strip()
        head = _git(workspace, "rev-parse", "--verify", "HEAD", own=False).decode().strip()
    except LatheError:
        return None
    return head if Path(top).resolve() == workspace else None


def _clone_with_changes(workspace: Path, destination: Path, head: str) -> None:
    _git(workspace, "clone", "--quiet", "--local", "--no-checkout", ".", str(destination),
         own=False)  # fmt: skip
    _git(destination, "checkout", "--quiet", "--detach", head)
    for path in _submodules(destination):  # their files, as the parent has them checked out
        source = workspace / path
        if source.is_dir():
            shutil.copytree(source, destination / path, symlinks=True, dirs_exist_ok=True,
                            ignore=_ignore_in(source, ".git"))  # fmt: skip
    uncommitted = _git(workspace, "diff", "--binary", "--no-renames", "HEAD", own=False)
    if uncommitted:
        _git(destination, "apply", "--binary", "--whitespace=nowarn", "-", feed=uncommitted)
    listing = _git(workspace, *_user_ignores(), "ls-files", "--others", "--exclude-standard",
                   "-z", own=False)  # fmt: skip
    for relative in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not relative:
            continue
        source, target = workspace / relative, destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.endswith("/"):  # a repository of its own inside: listed as a folder
            # Its files, as the parent sees them; its history stays with it.
            outer_git = _ignore_in(source, ".git")
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, ignore=outer_git)
        else:
            shutil.copy2(source, target, follow_symlinks=False)


def _ignore_in(folder: Path, name: str):
    """A copytree filter leaving out `name` directly inside `folder` only."""
    return lambda where, names: [name] if Path(where) == folder and name in names else []


def _user_ignores() -> list[str]:
    """The user's global ignore file for git commands run without their config (what
    the user ignores everywhere stays behind too)."""
    found = global_excludes_file()
    return ["-c", f"core.excludesFile={found}"] if found is not None and found.is_file() else []


def _copy_tree(workspace: Path, destination: Path) -> None:
    shutil.copytree(workspace, destination, symlinks=True)
    _git(destination, "init", "--quiet")


def _commit_everything(path: Path, message: str, *, force: bool) -> str:
    _git(path, "add", "--all", *(["--force"] if force else []))
    _git(path, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
    return _git(path, "rev-parse", "HEAD").decode().strip()


def _stage_everything(tree: Worktree) -> None:
    # A copy has no ignore rules of the parent's to honour; a clone has its own.
    force = not (tree.source / ".git").exists()
    _git(tree.path, "add", "--all", *(["--force"] if force else []))


def _apply(workspace: Path, patch_file: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    # Outside any repository's discovery, so paths are the workspace's own even where the
    # workspace is a folder inside a repository.
    env = isolated_git_environment(None, Path(os.devnull))
    env["GIT_CEILING_DIRECTORIES"] = str(workspace.parent)
    return subprocess.run(
        ["git", "apply", "--binary", "--whitespace=nowarn", *extra, str(patch_file)],
        cwd=workspace,
        env=env,
        capture_output=True,
        check=False,
    )


def _git(cwd: Path, *args: str, feed: bytes | None = None, own: bool = True) -> bytes:
    """Run git in `cwd`: pinned to `cwd`'s own `.git` (a child's folder), or with `own`
    False found as git finds it (the parent's repository)."""
    # Hooks are looked for under a folder that cannot exist: none ever runs.
    env = isolated_git_environment(None, Path(os.devnull))
    if own:
        env["GIT_DIR"], env["GIT_WORK_TREE"] = str(cwd / ".git"), str(cwd)
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            input=feed,
            stdin=None if feed is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise UsageError("git was not found on PATH; subagents need git: install it") from exc
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip()
        raise LatheError(f"git {args[0]} in {cwd} failed (exit {proc.returncode}): {detail}")
    return proc.stdout
