"""The shadow git repository that stores a workspace's checkpoints.

One per workspace, at `$LATHE_HOME/checkpoints/<project-slug>/git`, with the workspace
as its work tree. Every git command gets `--git-dir` and `--work-tree` explicitly and a
scrubbed environment, so nothing reaches the user's own `.git`: not its index, branches,
stash, hooks or config. The user's system and global git config are not read either,
because a filter, hook, fsmonitor or signing setting there would run inside our commands;
only their ignore rules are carried over (into the shadow's `info/exclude`).

Checkpoints are commits on one ref, `refs/lathe/checkpoints`, each the parent of the next.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import subprocess
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.errors import LatheError, UsageError

REF = "refs/lathe/checkpoints"
GITLINK_MODE = "160000"
SYMLINK_MODE = "120000"
_REGULAR = b"100644"
_EXECUTABLE = b"100755"
_NO_FILE = "000000"

_IDENTITY = {
    "GIT_AUTHOR_NAME": "lathe",
    "GIT_AUTHOR_EMAIL": "checkpoints@lathe.invalid",
    "GIT_COMMITTER_NAME": "lathe",
    "GIT_COMMITTER_EMAIL": "checkpoints@lathe.invalid",
}

# Local config of the shadow repo. The user's config is not read at all (see the module
# docstring); these pin the settings whose defaults could still change bytes or run code.
_CONFIG = {
    "user.name": "lathe",
    "user.email": "checkpoints@lathe.invalid",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.fsmonitor": "false",
    "core.symlinks": "true",
    "gc.autoDetach": "false",
    "maintenance.auto": "false",
}

# Highest-precedence attributes: store and restore bytes exactly, whatever the
# workspace's .gitattributes ask for (eol conversion, LFS or other filters).
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"


@dataclass(frozen=True)
class Change:
    """One path that differs between two trees, as `git diff-tree --raw` reports it."""

    path: str
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str

    @property
    def status(self) -> str:
        if self.old_mode == _NO_FILE:
            return "added"
        if self.new_mode == _NO_FILE:
            return "deleted"
        return "modified"

    @property
    def is_nested_repo(self) -> bool:
        return GITLINK_MODE in (self.old_mode, self.new_mode)


@dataclass(frozen=True)
class LogRecord:
    commit: str
    tree: str
    parent: str | None
    timestamp: int
    message: str
    changes: tuple[tuple[str, str], ...]  # (git status letter, path)


class ShadowRepo:
    """Thin, typed wrapper over the git commands checkpoints need."""

    def __init__(self, workspace: Path, root: Path, home: Path) -> None:
        self.workspace = workspace
        self.root = root
        self.home = home
        self.git_dir = root / "git"
        self._tracked_cache: tuple[tuple[int, int], set[str]] | None = None
        self._silenced: frozenset[str] = frozenset()  # see `_silence_nested_filters`
        # The repositories nested in the workspace at the last staging: recorded as their
        # commit alone, so what changes inside them is in no checkpoint.
        self.nested: tuple[str, ...] = ()

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def ensure(self) -> None:
        """Create the repository on first use, then refresh its ignore rules."""
        if not self.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", "--template=", str(self.git_dir), bare=True)
            info = self.git_dir / "info"
            info.mkdir(exist_ok=True)
            (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
            (self.root / "workspace").write_text(f"{self.workspace}\n", encoding="utf-8")
        self._refresh_excludes()

    # -- plumbing -------------------------------------------------------------------

    def stage_all(self) -> str:
        """Stage the whole work tree in the shadow index and return its tree id: every
        file the ignore rules do not ignore, and those they do that the user's own
        repository tracks (git keeps a tracked file whatever the rules say)."""
        self._silence_nested_filters()
        self._git("add", "--all", "--ignore-errors", "--", ".", ok_codes=(0, 1))
        tracked = self._tracked_by_the_user_yet_ignored()
        # Files recorded earlier stay in the index even once the user ignores them.
        now_ignored = self._git("ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
        dropped = [p for p in _listed(now_ignored) if p not in tracked]
        if dropped:
            self._git(
                "rm",
                "--cached",
                "--quiet",
                "--ignore-unmatch",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                feed=_nul_list(dropped),
            )
        present = [p for p in tracked if os.path.lexists(self.workspace / p)]
        if present:
            self._git(
                "add",
                "--force",
                "--ignore-errors",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                feed=_nul_list(present),
                ok_codes=(0, 1),
            )
        return self._git("write-tree").decode().strip()

    def folders_without_files(self) -> list[str]:
        """After staging: the folders that hold no file the snapshot records (empty, or
        only ignored files), outermost only. A snapshot records files, not folders."""
        listed = self._git("ls-files", "-z", "--others", "--directory", "--exclude-standard")
        return [name.rstrip("/") for name in _listed(listed) if name.endswith("/")]

    def staged_nested(self) -> tuple[str, ...]:
        """The nested repositories the last staging found, read back from the index."""
        return tuple(sorted(_gitlinks(self._git("ls-files", "-z", "--stage"))))

    def _silence_nested_filters(self) -> None:
        """Give every filter the repositories nested in the workspace declare an empty
        command in lathe's own git commands (and the git processes they start).

        A folder holding a `.git` is a submodule to git, which asks it whether it is
        dirty by running git in it, under the config its `.git` names — a file any
        command can write: a sandboxed command pointed one at a copy of the git dir with
        a `filter.x.clean` program, and the next snapshot ran it on this machine. Config
        given in the environment outranks a repository's, so it is silenced there."""
        gitlinks = _gitlinks(self._git("ls-files", "-z", "--stage"))
        self.nested = tuple(sorted(gitlinks))
        self._silenced = frozenset(_nested_filters(self.workspace, gitlinks))

    def _tracked_by_the_user_yet_ignored(self) -> set[str]:
        """The workspace's files (relative to it) that the user's repository tracks
        although its ignore rules match them (`git add -f`). Read from that repository
        with the same isolation as the shadow's own commands; asked again only when its
        index changed."""
        found = _repository_around(self.workspace)
        if found is None:
            return set()
        index = found[0] / ".git" / "index"
        try:
            stamp = index.stat()
            key: tuple[int, int] | None = (stamp.st_mtime_ns, stamp.st_size)
        except OSError:
            key = None  # a worktree or submodule: its index lives elsewhere; ask each time
        if key is not None and self._tracked_cache is not None and self._tracked_cache[0] == key:
            return self._tracked_cache[1]
        # Found by git itself from the workspace (`bare`: no shadow git dir); 128, a
        # repository git will not read (another owner's), tracks nothing here.
        listed = self._git(
            "ls-files", "-z", "--cached", "--ignored", "--exclude-standard",
            bare=True, ok_codes=(0, 128),
        )  # fmt: skip
        tracked = set(_listed(listed))
        if key is not None:
            self._tracked_cache = (key, tracked)
        return tracked

    def head(self) -> str | None:
        # The ref is a loose file (nothing here packs refs): reading it saves a git
        # process on every snapshot. git answers when the file is not there or odd.
        try:
            loose = (self.git_dir / REF).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            loose = ""
        if len(loose) == 40 and all(c in "0123456789abcdef" for c in loose):
            return loose
        out = self._git("rev-parse", "--verify", "--quiet", f"{REF}^{{commit}}", ok_codes=(0, 1))
        return out.decode().strip() or None

    def mend_ref(self) -> None:
        """Point a ref a crash left empty or torn at the newest checkpoint again: the
        commits are there, but git takes the ref for broken, and every command went wrong
        in its own way ("no checkpoints yet", "nothing to undo", a run refused with
        "reference broken"). The newest is the tip of the longest first-parent chain
        (the newest commit among equals): a writer that lost the race for the ref left
        its commit on an older parent. Call it under the store's lock; with no commit at
        all, the torn file goes."""
        ref = self.git_dir / REF
        try:
            loose = ref.read_bytes().strip()
        except OSError:
            return  # none yet (or packed, which git reads itself)
        if len(loose) == 40 and all(c in b"0123456789abcdef" for c in loose):
            return
        if loose.startswith(b"ref: "):
            return  # symbolic: git resolves it
        listed = self._git(
            "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)"
        )
        commits = [line[7:] for line in listed.decode().splitlines() if line.startswith("commit ")]
        if not commits:
            ref.unlink()
            return
        walked = self._git(
            "rev-list", "--no-walk=unsorted", "--parents", "--timestamp", "--stdin",
            feed="".join(f"{c}\n" for c in commits).encode(),
        )  # fmt: skip
        parent: dict[str, str | None] = {}
        stamp: dict[str, int] = {}
        for line in walked.decode().splitlines():
            when, commit, *parents = line.split()
            parent[commit], stamp[commit] = (parents[0] if parents else None), int(when)
        depth: dict[str, int] = {}
        for commit in parent:
            path = []
            at: str | None = commit
            while at is not None and at not in depth:
                path.append(at)
                at = parent.get(at)
            below = depth.get(at, 0) if at is not None else 0
            for step in reversed(path):
                below += 1
                depth[step] = below
        tip = max(parent, key=lambda c: (depth[c], stamp[c], c))
        # Only now: a failure above leaves the torn file, which says the store is broken,
        # rather than no ref at all, which says there are no checkpoints.
        ref.unlink()
        self._git("update-ref", "-m", "checkpoint ref mended", REF, tip, "0" * 40)

    def commit(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-F", "-"]
        if parent:
            args += ["-p", parent]
        commit = self._git(*args, feed=message.encode()).decode().strip()
        # Compare-and-swap, so two writers racing on the ref cannot drop a checkpoint.
        self._git("update-ref", "-m", "checkpoint", REF, commit, parent or "0" * 40)
        return commit

    def log(self, rev: str = REF, max_count: int | None = None) -> list[LogRecord]:
        args = [
            "-c",
            "log.showRoot=false",
            "log",
            "-z",
            "--no-renames",
            "--name-status",
            "--format=%x1e%H%x1f%T%x1f%P%x1f%ct%x1f%B%x1f",
            "--first-parent",
        ]
        if max_count is not None:
            args.append(f"--max-count={max_count}")
        out = self._git(*args, rev, "--").decode("utf-8", "surrogateescape")
        try:
            return _parse_log(out)
        except ValueError as exc:
            raise LatheError(
                f"checkpoint store {self.git_dir}: lathe cannot read its history ({exc}); "
                f"the store is damaged: move {self.root} aside (its checkpoints go with "
                "it; the workspace is not touched)"
            ) from None

    def count(self, rev: str) -> int:
        """How many checkpoints the chain holds up to and including `rev`."""
        return int(self._git("rev-list", "--count", "--first-parent", rev).decode().strip())

    def diff(self, old_tree: str, new_tree: str) -> list[Change]:
        out = self._git("diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree, "--")
        fields = out.decode("utf-8", "surrogateescape").split("\0")
        changes = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, old_blob, new_blob, _status = meta[1:].split(" ")
            changes.append(Change(path, old_mode, new_mode, old_blob, new_blob))
        return changes

    def read(self, tree: str, path: str) -> bytes | None:
        """The content of the file at `path` in `tree`; None when it holds none there."""
        listed = self._git("ls-tree", "-z", tree, "--", path).split(b"\0")[0]
        meta = listed.split(b"\t", 1)[0].split()
        if len(meta) != 3 or meta[1] != b"blob":
            return None
        return self._git("cat-file", "blob", meta[2].decode())

    def regular_files(self, tree: str) -> dict[str, bool]:
        """Each regular file `tree` records, with whether it is executable there."""
        found: dict[str, bool] = {}
        for entry in self._git("ls-tree", "-r", "-z", tree).split(b"\0"):
            meta, _, path = entry.partition(b"\t")
            kind = meta[:6]
            if kind in (_REGULAR, _EXECUTABLE):
                found[path.decode("utf-8", "surrogateescape")] = kind == _EXECUTABLE
        return found

    def paths(self, tree: str) -> set[str]:
        """Every file (and nested repository) `tree` records."""
        return set(_listed(self._git("ls-tree", "-r", "-z", "--name-only", tree)))

    def directories(self, tree: str) -> set[str]:
        return set(_listed(self._git("ls-tree", "-r", "-d", "-z", "--name-only", tree)))

    def ignored(self, paths: list[str]) -> set[str]:
        """Those of `paths` the workspace's ignore rules, as they are now, ignore."""
        out = self._git(
            "check-ignore", "-z", "--stdin", "--no-index", feed=_nul_list(paths), ok_codes=(0, 1)
        )
        return set(_listed(out))

    def file_modes(self) -> dict[str, tuple[bool, int]]:
        """After staging: each regular file the snapshot records, as (whether its tree
        says executable, its permission bits now). git keeps the first alone, so a
        checkpoint records the bits itself (`model.Modes`); a file gone meanwhile is
        left out."""
        found: dict[str, tuple[bool, int]] = {}
        listed = self._git("ls-files", "-z", "--stage")
        # Bytes and a folder descriptor: a stat per file, so a Path per file would
        # triple the cost of a snapshot's look at the modes (5,000 files: 60 ms).
        folder = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for entry in listed.split(b"\0"):
                meta, _, path = entry.partition(b"\t")
                kind = meta[:6]
                if kind not in (_REGULAR, _EXECUTABLE):
                    continue
                try:
                    status = os.lstat(path, dir_fd=folder)
                except OSError:
                    continue
                if stat.S_ISREG(status.st_mode):
                    name = path.decode("utf-8", "surrogateescape")
                    found[name] = (kind == _EXECUTABLE, stat.S_IMODE(status.st_mode) & 0o777)
        finally:
            os.close(folder)
        return found

    def blobs(self, ids: Iterable[str]) -> Iterator[bytes]:
        """The content of each blob of `ids`, in order, read one at a time from one
        `git cat-file --batch` (a restore's files are never all in memory at once)."""
        with subprocess.Popen(
            self._argv(("cat-file", "--batch")),
            cwd=self.workspace,
            env=isolated_git_environment(None, self.git_dir, silenced=self._silenced),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                for blob in ids:
                    proc.stdin.write(f"{blob}\n".encode())
                    proc.stdin.flush()
                    header = proc.stdout.readline().split()
                    if len(header) != 3 or header[1] != b"blob":
                        raise self._failed(("cat-file",), 1, f"no blob {blob} in the store")
                    content = proc.stdout.read(int(header[2]))
                    proc.stdout.read(1)  # the newline after each object
                    yield content
            finally:
                proc.stdin.close()

    # -- internals ------------------------------------------------------------------

    def _git(
        self,
        *args: str,
        feed: bytes | None = None,
        ok_codes: tuple[int, ...] = (0,),
        bare: bool = False,
    ) -> bytes:
        try:
            proc = subprocess.run(
                self._argv(args, bare=bare),
                cwd=self.workspace,
                env=isolated_git_environment(None, self.git_dir, silenced=self._silenced),
                input=feed,
                stdin=None if feed is not None else subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
        except FileNotFoundError as exc:
            raise UsageError(
                "git was not found on PATH; lathe's checkpoints and undo need git "
                "(2.32 or newer): install it, or put it on PATH"
            ) from exc
        if proc.returncode not in ok_codes:
            raise self._failed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout

    def _argv(self, args: Sequence[str], *, bare: bool = False) -> list[str]:
        if bare:
            return ["git", *args]
        return ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.workspace}", *args]

    def _failed(self, args: Sequence[str], code: int, stderr: str) -> LatheError:
        detail = "; ".join(stderr.split("\n")).strip("; ")
        return LatheError(
            f"checkpoint store {self.git_dir}: git {_subcommand(tuple(args))} failed "
            f"(exit {code}): {detail or '(no message)'}; if the store is "
            f"damaged, move {self.root} aside (its checkpoints go with it; the "
            "workspace is not touched)"
        )

    def _refresh_excludes(self) -> None:
        lines = ["# written by lathe on every snapshot; edits here are lost", "/.git"]
        lines += _ignore_rules_above(self.workspace)
        # A LATHE_HOME inside the workspace would otherwise record its own sessions.
        inside = _relative_inside(self.home, self.workspace)
        if inside is not None:
            lines.append(f"/{inside}/")
        text = "\n".join(lines) + "\n"
        exclude = self.git_dir / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        if not exclude.is_file() or exclude.read_text(encoding="utf-8") != text:
            exclude.write_text(text, encoding="utf-8")


def _nul_list(paths: Iterable[str]) -> bytes:
    """`paths` as git's `-z` input takes them."""
    return "".join(f"{p}\0" for p in paths).encode("utf-8", "surrogateescape")


_FILTER_COMMAND = re.compile(r"filter\.(.+)\.(?:clean|smudge|process)", re.IGNORECASE)
_NESTED_DEPTH = 4


def _nested_filters(folder: Path, gitlinks: Sequence[str], depth: int = 0) -> set[str]:
    """The filter names the config of each repository nested at `gitlinks` (paths in
    `folder`) declares a command for, theirs included, `_NESTED_DEPTH` levels down.
    Read with `git config` and `ls-files`, which run nothing."""
    names: set[str] = set()
    env = isolated_git_environment(None, Path(os.devnull))
    for relative in gitlinks:
        nested = folder / relative
        git_dir = _git_dir_of(nested)
        if git_dir is None:
            continue
        config = subprocess.run(
            ["git", f"--git-dir={git_dir}", "config", "--list", "--name-only"],
            env=env, cwd=nested, capture_output=True, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        for key in config.stdout.decode("utf-8", "replace").splitlines():
            if found := _FILTER_COMMAND.fullmatch(key.strip()):
                names.add(found[1])
        if depth + 1 >= _NESTED_DEPTH:
            continue
        staged = subprocess.run(
            ["git", f"--git-dir={git_dir}", "ls-files", "-z", "--stage"],
            env=env, cwd=nested, capture_output=True, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        names |= _nested_filters(nested, _gitlinks(staged.stdout), depth + 1)
    return names


def _gitlinks(staged: bytes) -> list[str]:
    """The paths of the nested repositories (gitlinks) in `ls-files -z --stage` output."""
    entries = staged.decode("utf-8", "surrogateescape").split("\0")
    return [e.split("\t", 1)[1] for e in entries if e.startswith(GITLINK_MODE) and "\t" in e]


def _git_dir_of(folder: Path) -> Path | None:
    """The git dir a folder's `.git` names: the folder itself, or the one a `.git` file
    points at (`gitdir: PATH`, relative to the folder); None when there is neither."""
    dot_git = folder / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return folder / line.removeprefix("gitdir:").strip()


def _listed(out: bytes) -> list[str]:
    """The paths of git's `-z` output."""
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _subcommand(args: tuple[str, ...]) -> str:
    """The git command `args` run (`log` in `-c log.showRoot=false log ...`)."""
    after_c = False
    for arg in args:
        if after_c:
            after_c = False
        elif arg == "-c":
            after_c = True
        elif not arg.startswith("-"):
            return arg
    return " ".join(args[:1])


def isolated_git_environment(
    index: Path | None, git_dir: Path, *, silenced: Collection[str] = ()
) -> dict[str, str]:
    """The environment of a git command lathe runs for itself: no inherited GIT_*
    variables, no system or global config, no hooks, lathe's identity, bytes kept as
    they are (no eol conversion); `index` replaces the index file when given, and each
    filter named in `silenced` runs nothing."""
    # Inherited GIT_* variables (GIT_DIR from a hook, GIT_INDEX_FILE, ...) would point
    # our commands at the user's repository, so none survive.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_IDENTITY)
    # The settings travel with every command (git 2.31+) rather than in the repository's
    # config: writing them there took eleven `git config` runs on a workspace's first
    # snapshot, and a setting passed this way outranks any the repository holds.
    settings = {**_CONFIG, "core.hooksPath": str(git_dir / "no-hooks")}
    for name in sorted(silenced):
        for command in ("clean", "smudge", "process"):
            settings[f"filter.{name}.{command}"] = ""
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for n, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


def _parse_log(out: str) -> list[LogRecord]:
    """The records of `log`'s output, read in sequence: each commit's header (from its
    0x1E to the NUL after it), then its (status, path) pairs, each field ended by a NUL.
    A path may hold any byte but NUL (0x1E and 0x1F too), so none is split on: a path is
    always the field after a status. Raises ValueError for output of another shape."""
    commits: list[tuple[str, list[tuple[str, str]]]] = []
    fields = iter(out.split("\0"))
    for field in fields:
        status = field.lstrip("\n")
        if status.startswith("\x1e"):
            commits.append((status[1:], []))
        elif status:
            path = next(fields, "")
            if not commits or not status.isalnum() or not path:
                raise ValueError(f"a file status {status[:20]!r} outside a commit record")
            commits[-1][1].append((status, path))
    return [_parse_record(header, tuple(changes)) for header, changes in commits]


def _parse_record(header: str, changes: tuple[tuple[str, str], ...]) -> LogRecord:
    """One commit's `%H%x1f%T%x1f%P%x1f%ct%x1f%B%x1f` (see `ShadowRepo.log`), its changes
    beside it: the message is all after the fourth 0x1F but the one that ends it."""
    parts = header.split("\x1f", 4)
    if len(parts) != 5 or not parts[4].endswith("\x1f") or not parts[3].isdigit():
        raise ValueError(f"a commit record of another shape: {header[:60]!r}")
    commit, tree, parents, stamp, message = parts
    return LogRecord(
        commit=commit,
        tree=tree,
        parent=parents.split(" ")[0] or None,
        timestamp=int(stamp),
        message=message[:-1],
        changes=changes,
    )


def global_excludes_file() -> Path | None:
    """The user's global ignore file, found the way git finds it, without running git."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    configured = _read_excludes_setting(Path.home() / ".gitconfig") or _read_excludes_setting(
        Path(xdg) / "git" / "config"
    )
    if configured:
        return Path(configured).expanduser()
    return Path(xdg) / "git" / "ignore"


def _read_excludes_setting(config: Path) -> str | None:
    # A deliberately small reader: [core] excludesFile = path, the common spelling.
    if not config.is_file():
        return None
    section = ""
    for raw in config.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section == "core" and "=" in line:
            key, value = line.split("=", 1)
            if key.strip().lower() == "excludesfile":
                return value.strip().strip('"')
    return None


def _ignore_rules_above(workspace: Path) -> list[str]:
    """The ignore rules git applies inside the workspace that the shadow, whose work
    tree starts at the workspace, would not read itself: the global excludes file, the
    `info/exclude` of the repository around the workspace, and the `.gitignore` files of
    the folders from that repository's root down to the workspace's parent. Each is
    rewritten to hold from the workspace (`_rebased`): in a subfolder of a repository
    the root's `node_modules/`, `.env` and `/app/build/` must still hold."""
    found = _repository_around(workspace)
    root, git_dir = found if found else (workspace, None)
    sources = [(global_excludes_file(), root)]
    if git_dir is not None:
        sources.append((git_dir / "info" / "exclude", root))
        sources += [(folder / ".gitignore", folder) for folder in _folders_between(root, workspace)]
    rules: list[str] = []
    for file, holds_from in sources:
        if file is not None and file.is_file():
            text = file.read_text(encoding="utf-8", errors="replace")
            rules += _rebased(text, workspace.relative_to(holds_from).parts)
    return rules


def _repository_around(workspace: Path) -> tuple[Path, Path] | None:
    """(the root folder, the git dir whose info/ holds its excludes) of the repository
    containing the workspace, if there is one."""
    for directory in (workspace, *workspace.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return directory, dot_git
        if dot_git.is_file():
            return directory, _common_dir(dot_git)
    return None


def _folders_between(root: Path, workspace: Path) -> list[Path]:
    """`root` and the folders below it down to the workspace's parent, top first."""
    parts = workspace.relative_to(root).parts
    return [root.joinpath(*parts[:depth]) for depth in range(len(parts))]


def _rebased(text: str, below: tuple[str, ...]) -> list[str]:
    """The rules of an ignore file `text` that hold in its folder's subfolder `below`
    (path parts), written to hold from there. A pattern without an inner slash holds at
    any depth, and so does one starting `**/`: kept as written. An anchored one holds in
    the subfolder only when its leading parts match `below`: the rest of it, anchored
    there. Others (naming a folder beside it, the subfolder itself or one above it, or
    with `**` among its leading parts) are dropped."""
    if not below:
        return text.splitlines()
    rules = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        negated = line.startswith("!")
        body = line[1:] if negated else line
        folders_only = body.endswith("/")
        pattern = body[:-1] if folders_only else body
        if "/" not in pattern or pattern.startswith("**/"):
            rules.append(line)
            continue
        parts = pattern.lstrip("/").split("/")
        leading = parts[: len(below)]
        if len(parts) <= len(below) or "**" in leading:
            continue
        if all(fnmatch.fnmatchcase(name, part) for name, part in zip(below, leading, strict=True)):
            rest = "/".join(parts[len(below) :]) + ("/" if folders_only else "")
            rules.append(("!" if negated else "") + "/" + rest)
    return rules


def _common_dir(gitfile: Path) -> Path:
    # A worktree or submodule: `.git` is a file naming the real git dir, and a worktree's
    # git dir names the shared one in `commondir`.
    text = gitfile.read_text(encoding="utf-8", errors="replace").strip()
    git_dir = Path(text.removeprefix("gitdir:").strip())
    if not git_dir.is_absolute():
        git_dir = gitfile.parent / git_dir
    commondir = git_dir / "commondir"
    if commondir.is_file():
        shared = Path(commondir.read_text(encoding="utf-8").strip())
        return shared if shared.is_absolute() else git_dir / shared
    return git_dir


def _relative_inside(path: Path, workspace: Path) -> str | None:
    try:
        inside = path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return None
    return None if inside == "." else inside
