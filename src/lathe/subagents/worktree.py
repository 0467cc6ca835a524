"""A child agent's own copy of the parent's workspace, and its changes coming back.

`create_worktree` gives a child a folder under lathe's data dir (never inside the user's
repository) holding what the parent sees at that moment: for a workspace that is a git
repository's top level, a local clone checked out at the parent's HEAD with the parent's
uncommitted changes and untracked files laid over it (ignored files stay behind); for
any other workspace, a copy. Neither holds a nested repository's `.git`, only its files.
Either way the child's folder is a repository of its own whose first commit, `base`, is
that state, so the child's changes are exactly the difference from `base`. Nothing is
written into the user's `.git`: no worktree metadata, no refs, no config. Creations for
one workspace are serialised by a lock. While a folder is its own, the lathe that made
it holds a lock beside it (`owner_file`, recording `base`): a later run tells a folder
a killed lathe left by that lock, free (`claim_orphans`, `subagents/orphans.py`). A
folder left to the user (its changes could not be read back) is marked so
(`keep_for_user`), its lock dropped: later runs leave it alone.

`child_changes` is that difference, as files with line counts and as a binary git
patch; `apply_patch` lands it in the parent's workspace only when all of it applies
(`git apply --check` first). When the workspace has changed those files since the child
started (a sibling's changes landed), each is merged three ways, from `base`: edits to
other lines of a file both stay. Where both changed the same lines the workspace is left
as it was; the patch file is kept for the user, with a second one that applies to the
workspace as it is, the clashes between conflict markers.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lathe.checkpoint.shadow import global_excludes_file, isolated_git_environment
from lathe.errors import LatheError, UsageError
from lathe.file_lock import FileLock
from lathe.home import private_folder, project_slug

_BASE_MESSAGE = "lathe: the parent's workspace when the child started"


@dataclass(frozen=True)
class Worktree:
    """A child's workspace: `path`, a repository whose commit `base` holds the parent's
    state at creation; `source` is the parent's workspace. `owner` is the lock on
    `owner_file(path)` this process holds as long as the folder is its own: a lathe
    killed with -9 holds it no more, and a later run saves and removes what it left
    (`claim_orphans`)."""

    path: Path
    base: str
    source: Path
    owner: FileLock | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class FileStat:
    """One file a child changed: lines added and deleted (None for a binary file)."""

    path: str
    added: int | None
    deleted: int | None


@dataclass(frozen=True)
class Applied:
    """The outcome of `apply_patch`: `applied` False means the workspace is untouched and
    `reason` says why: git's own words, or the files the workspace has changed in the
    same places as the child (`clashes`). Then `marked`, when set, is a patch of the
    child's changes merged with the workspace's that applies to the workspace as it is
    now, each clash of text between conflict markers (a file that is not text stays as
    the workspace has it)."""

    applied: bool
    patch_file: Path
    reason: str = ""
    clashes: tuple[str, ...] = ()
    marked: Path | None = None


def worktrees_root(workspace: Path, home: Path) -> Path:
    return home / "worktrees" / project_slug(workspace)


def create_worktree(workspace: Path, home: Path, name: str) -> Worktree:
    """A new worktree named `name` (unique per workspace) holding the parent's state now."""
    workspace = workspace.resolve()
    root = private_folder(worktrees_root(workspace, home))  # copies of the workspace's files
    destination = root / name
    lock = FileLock(root / ".create.lock")
    lock.acquire(record=f"creating {name}\n")
    try:
        if destination.exists() or owner_file(destination).exists():
            raise LatheError(f"worktree {destination} already exists; choose another name")
        try:
            head = _repository_head(workspace)
            if head is None:
                _copy_tree(workspace, destination)
            else:
                _clone_with_changes(workspace, destination, head)
            base = _commit_everything(destination, _BASE_MESSAGE, force=head is None)
            # Under the creation lock, which `claim_orphans` takes too: no one sees the
            # folder without its owner.
            owner = FileLock(owner_file(destination))
            if owner.try_acquire(record=_owner_record(base)) is not None:
                owner.release()
                raise LatheError(f"worktree {destination} is being saved by another lathe")
        except BaseException:
            shutil.rmtree(destination, ignore_errors=True)
            owner_file(destination).unlink(missing_ok=True)
            raise
    finally:
        lock.release()
    return Worktree(path=destination, base=base, source=workspace, owner=owner)


def owner_file(path: Path) -> Path:
    """The lock beside a child's folder that its lathe holds while the folder is its
    own; its record names the holder's pid and the folder's `base`."""
    return path.with_name(f"{path.name}.lock")


def kept_file(path: Path) -> Path:
    """The marker beside a child's folder left to the user (`keep_for_user`)."""
    return path.with_name(f"{path.name}.kept")


def patch_file(patches: Path, name: str) -> Path:
    """Where child `name`'s unlanded changes are kept, in the 0700 `patches` folder."""
    return private_folder(patches) / f"{name}.patch"


def keep_patch(patches: Path, name: str, patch: bytes) -> Path | None:
    """`patch` written to child `name`'s patch file; None when it changed nothing."""
    if not patch:
        return None
    target = patch_file(patches, name)
    target.write_bytes(patch)
    return target


def keep_for_user(tree: Worktree) -> None:
    """Leave the child's folder to the user, who was told to copy from it and delete it:
    marked kept, which `claim_orphans` honours, and its owner lock dropped (held, it
    leaked in a long-lived lathe, and once it was gone the next run took the folder for
    a killed lathe's: "cut off ... (killed?)", and removed it once it could save it)."""
    kept_file(tree.path).write_text(f"{tree.base}\n", encoding="utf-8")
    if tree.owner is not None:  # marked first: a sweep that takes the lock sees the mark
        owner_file(tree.path).unlink(missing_ok=True)
        tree.owner.release()


def _owner_record(base: str) -> str:
    return f"{os.getpid()}\n{base}\n"


def claim_orphans(workspace: Path, home: Path) -> list[Worktree]:
    """The children's folders of `workspace` whose lathe ended without removing them (a
    kill -9), each now owned by this process for the caller to save and remove
    (`remove_worktree`); never one whose lathe still runs (it holds the folder's owner
    lock), nor one left to the user (`keep_for_user`), nor any while another lathe
    makes a folder: this run's start does not wait for a copy of the workspace, and a
    later one finds them. What holds no child's work is removed here: a folder left
    half made, an owner lock or a kept mark whose folder is gone."""
    root = worktrees_root(workspace.resolve(), home)
    try:
        left = [entry for entry in root.iterdir() if not entry.name.startswith(".")]
    except FileNotFoundError:  # no child ever had a folder here
        return []
    if not left:  # the usual case: every child's folder went when it ended
        return []
    claimed = []
    creating = FileLock(root / ".create.lock")  # no folder is half made by a live lathe now
    if creating.try_acquire(record="saving what a killed lathe's children left\n") is not None:
        creating.release()
        return []
    try:
        names = {entry.name.removesuffix(".lock").removesuffix(".kept") for entry in root.iterdir()}
        for name in sorted(n for n in names if not n.startswith(".")):
            if kept_file(root / name).exists():
                if not (root / name).is_dir():  # the user is done with it
                    kept_file(root / name).unlink(missing_ok=True)
                continue
            found = _orphan(root / name, workspace)
            if found is not None:
                claimed.append(found)
    finally:
        creating.release()
    return claimed


def _orphan(folder: Path, workspace: Path) -> Worktree | None:
    """`folder` as a worktree this process now owns, when its lathe has ended and it
    holds a child's work; None otherwise (what it left that holds none is removed)."""
    lock_file = owner_file(folder)
    try:
        record = lock_file.read_text(encoding="utf-8", errors="replace").split()
    except FileNotFoundError:  # made before owners were recorded, or killed making it
        record = []
    base = record[1] if len(record) > 1 else None
    if base is None and folder.is_dir():
        base = _base_by_message(folder)
    owner = FileLock(lock_file)
    # Its record kept whole: killed while saving this one, the next run finds it again.
    if owner.try_acquire(record=_owner_record(base or "")) is not None:
        owner.release()  # its lathe runs: not ours to wait for
        return None
    if kept_file(folder).exists():  # left to the user since we looked: its lock file went
        lock_file.unlink(missing_ok=True)
        owner.release()
        return None
    if base is None or not folder.is_dir():  # nothing of a child's: gone, or half made
        shutil.rmtree(folder, ignore_errors=True)
        lock_file.unlink(missing_ok=True)
        owner.release()
        return None
    return Worktree(path=folder, base=base, source=workspace, owner=owner)


def _base_by_message(folder: Path) -> str | None:
    """The base commit lathe made in `folder`, found by its message: for a folder whose
    owner lock records none."""
    found = _run_git(folder, "rev-list", "-1", "--fixed-strings", f"--grep={_BASE_MESSAGE}",
                     "HEAD")  # fmt: skip
    if found.returncode != 0:
        return None
    return found.stdout.decode().strip() or None


@dataclass(frozen=True)
class Changes:
    """What a child changed since `base`: the files with line counts, and all of it as a
    binary patch (b"" when nothing); `left_behind`, the files no patch carries: those it
    made at paths the workspace's ignore rules ignore (caches left out), changed inside a
    submodule, or that git refused to take."""

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
    refused = _stage_everything(tree)
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
    return Changes(tuple(files), patch, tuple(sorted({*_left_behind(tree), *refused})))


def _left_behind(tree: Worktree) -> tuple[str, ...]:
    """The files no patch carries: those at ignored paths in the child's folder, caches
    left out (a clone holds none of the parent's ignored files, so each is the child's
    own; a copy has no ignore rules: everything in it is staged), and those it changed
    inside a submodule (git stages none of a submodule's files)."""
    if not (tree.source / ".git").exists():
        return ()
    # The clone carries the user's ignore rules (`_carry_ignore_rules`).
    listing = _git(tree.path, "ls-files", "--others", "--ignored", "--exclude-standard", "-z")
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


def apply_patch(
    workspace: Path, patch: bytes, patch_file: Path, tree: Worktree | None = None
) -> Applied:
    """Write `patch` to `patch_file`, then apply it to `workspace` if, and only if, all
    of it applies. When it does not apply as it stands and `tree` is the worktree it
    came from, its files are merged three ways (`_merged`), and applied when all merge."""
    patch_file.parent.mkdir(parents=True, exist_ok=True)
    patch_file.write_bytes(patch)
    if not patch:
        return Applied(True, patch_file)
    check = _apply(workspace, patch_file, "--check")
    if check.returncode != 0:
        reason = check.stderr.decode("utf-8", "replace").strip() or "git apply --check failed"
        if tree is None:
            return Applied(False, patch_file, reason)
        try:
            return _merged(workspace, tree, patch_file)
        except LatheError:  # no merge to be had (a file turned folder): git's reason stands
            return Applied(False, patch_file, reason)
    done = _apply(workspace, patch_file)
    if done.returncode != 0:  # checked a moment ago: only a concurrent change gets here
        return Applied(False, patch_file, done.stderr.decode("utf-8", "replace").strip())
    return Applied(True, patch_file)


# A path's entry in a tree: (mode, object id); None where there is no file.
_Entry = tuple[str, str] | None
_REGULAR = ("100644", "100755")
_LEAVES = (*_REGULAR, "120000")  # what a merge can write: files and symlinks


def _merged(workspace: Path, tree: Worktree, patch_file: Path) -> Applied:
    """Each file the child changed, merged from what it started from (`tree.base`), what
    it left and what the workspace has now (`git merge-file` for text). All merged: the
    merge lands as one patch from the workspace as it is. Otherwise nothing lands, and
    `marked` holds that patch with the clashes between conflict markers."""
    listed = _git(tree.path, "diff", "--cached", "--name-only", "--no-renames", "-z", tree.base)
    paths = [p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p]
    ours: dict[str, _Entry] = {}
    result: dict[str, _Entry] = {}
    lines, whole = [], []  # the clashes: in some lines, or of files not merged by line
    with tempfile.TemporaryDirectory(prefix="lathe-merge-") as scratch:
        for path in paths:
            base = _entry_in(tree, tree.base, path)
            theirs = _entry_in(tree, None, path)
            mine = _workspace_entry(tree, workspace, path)
            if any(e is not None and e[0] not in _LEAVES for e in (base, theirs, mine)):
                whole.append(path)  # a folder or a submodule: nothing to merge
                continue
            ours[path] = mine
            result[path], clash = _merge_file(tree, Path(scratch), base, mine, theirs)
            {"lines": lines, "whole": whole, None: []}[clash].append(path)
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        before = _tree_with(tree, ours, index)
        after = _tree_with(tree, result, index)
    merged = patch_file.with_name(patch_file.stem + ".merged.patch")
    merged.write_bytes(_git(tree.path, "diff", "--binary", "--no-renames", before, after))
    if lines or whole:
        said = [f"the same lines of {', '.join(lines)}"] if lines else []
        if whole:
            said.append(
                f"{', '.join(whole)}, which cannot be merged by line (the merge keeps yours)"
            )
        reason = f"your workspace has changed {' and '.join(said)} since the subagent started"
        return Applied(False, patch_file, reason, (*lines, *whole), merged)
    try:
        for extra in ("--check", None):
            done = _apply(workspace, merged, *([extra] if extra else []))
            if done.returncode != 0:
                why = done.stderr.decode("utf-8", "replace").strip() or "git apply failed"
                return Applied(False, patch_file, why)
    finally:
        merged.unlink()
    return Applied(True, patch_file)


def _merge_file(
    tree: Worktree, scratch: Path, base: _Entry, ours: _Entry, theirs: _Entry
) -> tuple[_Entry, str | None]:
    """One file merged three ways, and its clash: None, "lines" (the text with its
    conflict markers), or "whole" (not text, made on both sides or removed on one: the
    workspace's own)."""
    if ours == base:
        return theirs, None
    if theirs == base or ours == theirs:
        return ours, None
    if base is None or ours is None or theirs is None:
        return ours, "whole"
    if not {base[0], ours[0], theirs[0]} <= set(_REGULAR):
        return ours, "whole"
    files = []
    for name, (_, blob) in (("workspace", ours), ("started", base), ("subagent", theirs)):
        (scratch / name).write_bytes(_git(tree.path, "cat-file", "blob", blob))
        files.append(str(scratch / name))
    merge = _run_git(tree.path, "merge-file", "-p", "-L", "workspace", "-L",
                     "when the subagent started", "-L", "subagent", *files)  # fmt: skip
    if merge.returncode < 0 or merge.returncode >= 128:  # not text (or git failed)
        return ours, "whole"
    mode = theirs[0] if ours[0] == base[0] else ours[0]
    blob = _git(tree.path, "hash-object", "-w", "--stdin", "--no-filters", feed=merge.stdout)
    return (mode, blob.decode().strip()), "lines" if merge.returncode else None


def _entry_in(tree: Worktree, commit: str | None, path: str) -> _Entry:
    """`path`'s entry in `commit`, or in the child's index (everything it left, staged)."""
    literal = {"GIT_LITERAL_PATHSPECS": "1"}
    if commit is None:
        listed = _git(tree.path, "ls-files", "--stage", "-z", "--", path, env=literal)
    else:
        listed = _git(tree.path, "ls-tree", "-z", commit, "--", path, env=literal)
    for record in listed.decode("utf-8", "surrogateescape").split("\0"):
        # "mode id stage\tpath" or "mode type id\tpath"; a folder's files are not it
        fields, _, named = record.partition("\t")
        if named == path:
            words = fields.split()
            return words[0], words[1] if commit is None else words[2]
    return None


def _workspace_entry(tree: Worktree, workspace: Path, path: str) -> _Entry:
    """`path` as the workspace has it, stored in the child's repository (as `git add`
    would store it there)."""
    file = workspace / path
    try:
        info = file.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(info.st_mode):
        target = os.fsencode(os.readlink(file))
        blob = _git(tree.path, "hash-object", "-w", "--stdin", "--no-filters", feed=target)
        return "120000", blob.decode().strip()
    if not stat.S_ISREG(info.st_mode):
        return "040000", ""  # a folder where the child has a file
    blob = _git(tree.path, "hash-object", "-w", f"--path={path}", "--", str(file))
    return ("100755" if info.st_mode & 0o100 else "100644"), blob.decode().strip()


def _tree_with(tree: Worktree, entries: dict[str, _Entry], index: dict[str, str]) -> str:
    """The tree of `base` with `entries` in place of its own (None: removed)."""
    _git(tree.path, "read-tree", tree.base, env=index)
    none = "0" * len(tree.base)
    lines = "".join(
        f"{e[0]} {e[1]}\t{p}\0" if e is not None else f"0 {none}\t{p}\0" for p, e in entries.items()
    )
    feed = lines.encode("utf-8", "surrogateescape")
    _git(tree.path, "update-index", "-z", "--index-info", feed=feed, env=index)
    return _git(tree.path, "write-tree", env=index).decode().strip()


def apply_command(workspace: Path, patch_file: Path) -> str:
    """The command that applies `patch_file` when run in `workspace`. In a folder below a
    repository's top, git takes a patch's paths from the top and skips those outside the
    folder without a word: `--directory` puts them back under it."""
    try:
        prefix = _git(workspace, "rev-parse", "--show-prefix", own=False).decode().strip()
    except LatheError:  # not in a repository: the paths are the folder's own
        prefix = ""
    directory = f"--directory={shlex.quote(prefix.rstrip('/'))} " if prefix else ""
    return f"git apply {directory}{shlex.quote(str(patch_file))}"


def remove_worktree(tree: Worktree) -> None:
    """The child's folder, then its owner lock, and the one its own children's folders
    were made in, with their creation lock (each child that started one had left it for
    good). That one stays while it holds a folder a child of this child left (its work
    not yet saved)."""
    # The child's folder lies in `home/worktrees/<slug>/` too.
    own_root = worktrees_root(tree.path, home=tree.path.parents[2])
    shutil.rmtree(tree.path, ignore_errors=True)
    if tree.owner is not None:  # the folder is gone: nothing is left to own
        owner_file(tree.path).unlink(missing_ok=True)
        tree.owner.release()
    lock_file = own_root / ".create.lock"
    if not lock_file.exists():
        return
    # Only this child's own run made folders there, and it has ended: no one waits on
    # the lock whose file goes. Taken all the same, in case one is still being made.
    # Tidying only: a failure leaves an empty folder, never a child's end undone.
    with contextlib.suppress(OSError):
        lock = FileLock(lock_file)
        lock.acquire(record="removing a finished child's folder\n")
        try:
            if [entry.name for entry in own_root.iterdir()] == [lock_file.name]:
                lock_file.unlink()
                own_root.rmdir()
        finally:
            lock.release()


def _repository_head(workspace: Path) -> str | None:
    """The HEAD commit when `workspace` is the top level of a git repository with at
    least one commit; None otherwise (a copy is made instead)."""
    try:
        top = _git(workspace, "rev-parse", "--show-toplevel", own=False).decode().strip()
        head = _git(workspace, "rev-parse", "--verify", "HEAD", own=False).decode().strip()
    except LatheError:
        return None
    return head if Path(top).resolve() == workspace else None


# A patch of the workspace's changes that `git apply` takes, whatever the user's diff
# settings: their `diff.noprefix`, `color.ui=always`, a textconv driver or an external
# diff tool had made every child fail to start while a file was modified.
_PLAIN_DIFF = ("--binary", "--no-renames", "--no-textconv", "--no-ext-diff", "--no-color",
               "--src-prefix=a/", "--dst-prefix=b/", "--submodule=short")  # fmt: skip


def _clone_with_changes(workspace: Path, destination: Path, head: str) -> None:
    _git(workspace, "clone", "--quiet", "--local", "--no-checkout", ".", str(destination),
         own=False)  # fmt: skip
    excludes = _carry_ignore_rules(workspace, destination)
    _git(destination, "checkout", "--quiet", "--detach", head)
    for path in _submodules(destination):  # their files, as the parent has them checked out
        source = workspace / path
        if source.is_dir():
            shutil.copytree(source, destination / path, symlinks=True, dirs_exist_ok=True,
                            ignore=_not_copied)  # fmt: skip
    uncommitted = _git(workspace, "diff", *_PLAIN_DIFF, "HEAD", own=False)
    if uncommitted:
        _git(destination, "apply", "--binary", "--whitespace=nowarn", "-", feed=uncommitted)
    # lathe's git reads no global config: the user's excludes file is named.
    named = ["-c", f"core.excludesFile={excludes}"] if excludes is not None else []
    listing = _git(workspace, *named, "ls-files", "--others", "--exclude-standard", "-z",
                   own=False)  # fmt: skip
    for relative in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not relative:
            continue
        source, target = workspace / relative, destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.endswith("/"):  # a repository of its own inside: listed as a folder
            # Its files, as the parent sees them; its history stays with it.
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, ignore=_not_copied)
        else:
            shutil.copy2(source, target, follow_symlinks=False)


def _not_copied(where: str, names: list[str]) -> list[str]:
    """A copytree filter leaving out every repository's `.git`, at any depth: in the
    child's repository a folder holding one is a gitlink, whose files no patch carries
    (a child's edits in a nested repository were dropped unsaid). And what is neither
    file, folder nor link (a named pipe, a socket, a device), as git leaves them out:
    copying one failed every child of the workspace."""
    left_out = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(where, name)).st_mode
        except FileNotFoundError:  # gone meanwhile: nothing to copy
            left_out.append(name)
            continue
        if name == ".git" or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            left_out.append(name)
    return left_out


def _carry_ignore_rules(workspace: Path, destination: Path) -> Path | None:
    """The workspace repository's ignore rules and attributes beyond its files, made the
    clone's own: its `info/exclude` after the user's excludes file (the repository's
    `core.excludesFile`, else the global one), in the clone's `info/exclude`, the later
    lines winning as git ranks them; its `info/attributes` in the clone's. Without them
    the child's `git add` took what the user ignores: an app.log of the child's clashed
    with the user's own and its whole work was refused. The excludes file, if any."""
    excludes = _excludes_file(workspace)
    found = _git(workspace, "rev-parse", "--git-path", "info/exclude", "--git-path",
                 "info/attributes", own=False).decode("utf-8", "surrogateescape")  # fmt: skip
    exclude, attributes = (workspace / line for line in found.splitlines())
    rules = [_read_if_any(excludes), _read_if_any(exclude)]
    info = destination / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "exclude").write_bytes(b"\n".join(r for r in rules if r) + b"\n")
    if attributes.is_file():
        shutil.copyfile(attributes, info / "attributes")
    return excludes


def _excludes_file(workspace: Path) -> Path | None:
    """The excludes file git reads for the user in `workspace`: the repository's own
    `core.excludesFile`, else the user's global one (lathe's git reads neither the
    global nor the system config); None when there is none."""
    own = _run_git(workspace, "config", "--type=path", "--get", "core.excludesFile", own=False)
    named = os.fsdecode(own.stdout.strip()) if own.returncode == 0 else ""
    found = workspace / named if named else global_excludes_file()
    return found if found is not None and found.is_file() else None


def _read_if_any(path: Path | None) -> bytes:
    try:
        return path.read_bytes().rstrip(b"\n") if path is not None else b""
    except OSError:  # unreadable: git itself would read none of it
        return b""


def _copy_tree(workspace: Path, destination: Path) -> None:
    shutil.copytree(workspace, destination, symlinks=True, ignore=_not_copied)
    _git(destination, "init", "--quiet")


def _commit_everything(path: Path, message: str, *, force: bool) -> str:
    _git(path, "add", "--all", *(["--force"] if force else []))
    _git(path, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
    return _git(path, "rev-parse", "HEAD").decode().strip()


def _stage_everything(tree: Worktree) -> tuple[str, ...]:
    """Everything in the child's folder staged, but what git refuses to take (a path it
    calls invalid, such as `GIT~1/n.txt`; a file it cannot read): those paths, left out.
    One such file had stopped the staging of all the others, and the child's whole work
    was lost with its folder."""
    # A copy has no ignore rules of the parent's to honour; a clone has its own.
    force = not (tree.source / ".git").exists()
    staged = _run_git(tree.path, "add", "--all", "--ignore-errors", *(["--force"] if force else []))
    if staged.returncode == 0:
        return ()
    if staged.returncode != 1:  # not a file refused: git itself failed
        detail = staged.stderr.decode("utf-8", "replace").strip()
        raise LatheError(f"git add in {tree.path} failed (exit {staged.returncode}): {detail}")
    untracked = _git(tree.path, "ls-files", "--others", "-z",
                     *([] if force else ["--exclude-standard"]))  # fmt: skip
    unstaged = _git(tree.path, "diff", "--name-only", "--no-renames", "-z")
    paths = (untracked + unstaged).decode("utf-8", "surrogateescape").split("\0")
    return tuple(sorted({p for p in paths if p}))


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


def _git(
    cwd: Path,
    *args: str,
    feed: bytes | None = None,
    own: bool = True,
    env: dict[str, str] | None = None,
) -> bytes:
    """Run git in `cwd`: pinned to `cwd`'s own `.git` (a child's folder), or with `own`
    False found as git finds it (the parent's repository); `env` adds to its
    environment. A LatheError when it fails."""
    proc = _run_git(cwd, *args, feed=feed, own=own, env=env)
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip()
        raise LatheError(f"git {args[0]} in {cwd} failed (exit {proc.returncode}): {detail}")
    return proc.stdout


def _run_git(
    cwd: Path,
    *args: str,
    feed: bytes | None = None,
    own: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`_git`, its exit status the caller's to judge."""
    # Hooks are looked for under a folder that cannot exist: none ever runs.
    environment = isolated_git_environment(None, Path(os.devnull))
    if own:
        environment["GIT_DIR"], environment["GIT_WORK_TREE"] = str(cwd / ".git"), str(cwd)
    environment.update(env or {})
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=environment,
            input=feed,
            stdin=None if feed is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise UsageError("git was not found on PATH; subagents need git: install it") from exc
