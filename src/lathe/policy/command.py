"""The command guard: what a bash command would do, judged before it runs.

`analyze` parses the command (see `shell_parse`), following it into script files it runs
(`scripts`), aliases it defines and one-line programs in Python, Perl, Ruby, Node or PHP
(`interpreters`), then judges every simple command, redirect and program effect found:

- deny, which no approval mode or rule overrides, so it is the whole defence in `full`
  mode: recursive deletion of `/`, the home directory or anything outside the workspace;
  deleting, truncating, shredding, overwriting or appending to files outside the
  workspace and the temp directories (`places`), by rm, unlink, shred, truncate, `>`,
  `>>`, tee, cp, mv, install, rsync, ln, sed -i, dd, `find | xargs`, or the same calls
  in a one-liner (`shutil.rmtree`, `os.remove`, `open(p, "w")`, `unlink`, `rmSync`);
  a command whose name is computed at run time but given `-r`/`-f` and such a path;
  a recursive deletion of a relative path where the folder it runs in is only known at
  run time (`cd "$X"; rm -rf *`: every folder it may be in is judged, `dirs`; a plain
  `rm` there asks, and a script on disk may only be denied where the folder is known);
  a git command that changes files where it works outside the workspace (its folder,
  `-C`, `--work-tree`/`--git-dir` and GIT_WORK_TREE/GIT_DIR), or that discards work
  where that is only known at run time; `git config` of a key that makes git run a
  program (`git_config`); signals to every process or to lathe (`signals`); mkfs and
  friends; writes to a device; fork bombs; chmod/chown/chgrp -R on system paths;
  shutdown and reboot; nesting past `MAX_DEPTH`.
- ask: sudo and other privilege changes; git push --force, git reset --hard, git clean
  -f; a download or decoded data piped into a shell; package installs outside a
  virtualenv; anything that is only known at run time (a variable as the command name,
  eval of a computed string, a redirect to `$F`); a command that does not parse.
- allow: everything else. What "allow" means (run, run sandboxed, or still ask) is the
  approval mode's decision, not the guard's. `policy.full_mode.FULL_MODE_GAPS` says in
  short phrases what is left unprotected when nothing but the deny list stands
  (`--approval full`).

`matches_rule` lets the approval layer test each simple command against rules such as
`git diff:*` (prefix on words) or `npm test` (exact words).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lathe.policy import file_commands, git_config, signals
from lathe.policy.dirs import join_path
from lathe.policy.places import UNKNOWN_FOLDER, Finding, FindPick, Places, in_unknown_folder
from lathe.policy.shell_parse import (
    Decision,
    Found,
    Redirect,
    SimpleCommand,
    parse_script,
)
from lathe.policy.shell_words import Word
from lathe.policy.streams import under
from lathe.policy.wrappers import PRIVILEGED, find_call

_RANK: Mapping[Decision, int] = {"allow": 0, "ask": 1, "deny": 2}
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs"})
_PACKAGE_VERBS: Mapping[str, frozenset[str]] = {
    "apt": frozenset({"install", "remove", "purge", "upgrade", "dist-upgrade",
                      "full-upgrade", "autoremove", "reinstall", "build-dep"}),
    "yum": frozenset({"install", "remove", "erase", "upgrade", "update", "reinstall",
                      "downgrade", "groupinstall", "localinstall"}),
    "zypper": frozenset({"install", "in", "remove", "rm", "update", "up", "dist-upgrade", "dup"}),
    "apk": frozenset({"add", "del", "upgrade"}),
    "brew": frozenset({"install", "uninstall", "remove", "rm", "reinstall", "upgrade"}),
    "snap": frozenset({"install", "remove", "refresh"}),
    "port": frozenset({"install", "uninstall", "upgrade"}),
    "gem": frozenset({"install", "uninstall", "update"}),
}  # fmt: skip
_PACKAGE_ALIASES = {"apt-get": "apt", "aptitude": "apt", "dnf": "yum", "microdnf": "yum"}
_RISKY_ENV = re.compile(
    r"PATH|IFS|ENV|BASH_ENV|SHELLOPTS|PROMPT_COMMAND|NODE_OPTIONS|PYTHON(PATH|STARTUP|HOME)"
    r"|PERL5(OPT|LIB)|RUBY(OPT|LIB)|(LD|DYLD|GIT)_\w+"
)


@dataclass(frozen=True)
class Analysis:
    decision: Decision
    reasons: tuple[str, ...]  # why `decision`: the findings at that level, in order
    findings: tuple[Finding, ...]  # everything noticed, e.g. the sudo ask under a deny
    commands: tuple[SimpleCommand, ...]  # every simple command, for rule matching
    # The paths it is known to write, overwrite or delete (absolute; a glob as named).
    changes: tuple[Path, ...] = ()
    # The commands run by a script this command line wrote or by a one-liner
    # (`os.system("git push")`): deny and ask rules hold for them too, allow rules not.
    indirect: tuple[SimpleCommand, ...] = ()
    # Those of a script on disk: deny and ask rules hold for the commands they name
    # (`git push origin "$BRANCH"`), not for what a word known only at run time may be:
    # a script's `$RUNNER ...` lines would match every deny rule.
    in_files: tuple[SimpleCommand, ...] = ()
    # What finds delete or hand to a command run on `{}`, each judged by the find's tests.
    picked: tuple[FindPick, ...] = ()


def analyze(
    command: str, *, workspace: Path, home: Path, environ: Mapping[str, str] | None = None
) -> Analysis:
    """Judge `command` as run by bash in `workspace`. `environ` (default: this process's)
    tells whether a virtualenv is active."""
    workspace = Path(os.path.abspath(workspace))
    home = Path(os.path.abspath(home))
    try:
        return _analyze(command, workspace, home, os.environ if environ is None else environ)
    except RecursionError:  # `((((...))))` a thousand deep: refused, not a crash of the run
        return _refused("the command is nested too deeply for the guard to follow")
    except OSError as error:  # a path the guard could not look at: refused, not a crash
        return _refused(f"could not judge the command: {error}")


def _refused(reason: str) -> Analysis:
    return Analysis("deny", (reason,), (Finding("deny", reason),), ())


def _analyze(command: str, workspace: Path, home: Path, environ: Mapping[str, str]) -> Analysis:
    script = parse_script(command, cwd=workspace, home=home, path=environ.get("PATH"))
    judge = _Judge(workspace, home, environ)
    findings = [Finding(decision, reason) for decision, reason in script.notes]
    commands = [*script.commands, *script.indirect]
    for simple in commands:
        base = PurePosixPath(simple.name).name
        if simple.resolved and base in ("ln", "cp"):  # cp only with -s (`links` says)
            for link, target in file_commands.links(simple.words[1:], simple.cwd, base):
                judge.places.link(link, target)
    for simple in commands:
        findings += _only_denies(judge.command(simple), simple.from_file)
    for redirect in script.redirects:
        findings += _only_denies(judge.redirect(redirect), redirect.from_file)
    for found in script.effects:
        findings += _only_denies(judge.effect(found), found.from_file)
    unique = tuple(dict.fromkeys(findings))
    decision = max((f.decision for f in unique), key=_RANK.__getitem__, default="allow")
    reasons = tuple(f.reason for f in unique if f.decision == decision)
    changes = tuple(dict.fromkeys(judge.places.changed))
    indirect = tuple(c for c in script.indirect if not c.from_file)
    in_files = tuple(c for c in script.indirect if c.from_file)
    picked = tuple(dict.fromkeys(judge.places.picked))
    return Analysis(
        decision, reasons, unique, tuple(script.commands), changes, indirect, in_files, picked
    )


def matches_rule(
    command: SimpleCommand, rule_pattern: str, *, could: bool = False, named: bool = False
) -> bool:
    """Does a rule pattern cover this simple command?

    `git diff:*` matches `git diff` followed by anything; `npm test` matches exactly those
    words. A command run through sudo/doas/su matches only patterns that start with that
    word (`sudo apt install:*`); other wrappers (timeout, env, bash -c, xargs) are
    transparent. Nothing matches a command with a word only known at run time, one that
    sets a variable which changes what runs (PATH, LD_PRELOAD, ...), or, for an exact
    pattern, one that gets arguments at run time (xargs).

    `could=True` is for deny and ask rules, which must hold against every spelling: the
    command matches when it *may* be the pattern's — a word known only at run time may
    be any word, a variable may change nothing, sudo may be left out, a path to the
    program is its name, and git's own options before the subcommand (`git -C . push`,
    `git -c alias.pu=push pu`) are looked through, and a command xargs feeds may get
    any words after its own (`echo push | xargs git` may be `git push`). Such a rule
    also holds through the wrappers a command was run by, named by their program alone:
    `strace:*` and `env:*` cover `strace ls` and `env -S ls`. With `named` as well, the
    program must be named: one known only at run time matches nothing, as for a script
    on disk whose `"$RUNNER" -q` may be anything and would otherwise match every rule;
    the words after a named program may still be anything (`xargs git`, `git "$A"`).
    """
    prefix = rule_pattern.endswith(":*")
    try:
        wanted = shlex.split(rule_pattern[:-2] if prefix else rule_pattern)
    except ValueError:
        return False
    if not wanted:
        return False
    privileged = [v for v in command.via if v in PRIVILEGED]
    if could:
        words = [w.value for w in command.words]
        if command.fed is not None:
            words.append(None)  # what xargs reads: any words, or none
        canonical = _canonical(words, configured=git_config.set_by_environment(command.assigned))
        spellings = [privileged + words, privileged + canonical, canonical]
        runners = [v.split()[0] for v in command.via]
        spellings += [runners[i:] + words for i in range(len(runners))]
        return any(_may_be(s, wanted, prefix=prefix, unknown_program=not named) for s in spellings)
    if not command.resolved or any(_RISKY_ENV.fullmatch(n) for n in command.assigned):
        return False
    subject = privileged + [w.value for w in command.words if w.value is not None]
    if prefix:
        return subject[: len(wanted)] == wanted
    return subject == wanted and command.fed is None


def _may_be(
    subject: list[str | None],
    wanted: list[str],
    *,
    prefix: bool,
    unknown_program: bool = True,
) -> bool:
    """Whether words of which None ones are unknown may be `wanted` (`prefix`: begin
    with it). An unknown word may stand for several, so from it on anything may follow;
    an unknown first word, the program, may be none of them (`unknown_program` False)."""
    for index, want in enumerate(wanted):
        if index >= len(subject):
            return False
        if subject[index] is None:
            return unknown_program or index > 0
        if subject[index] != want:
            return False
    if prefix:
        return True
    rest = subject[len(wanted) :]
    return not rest or rest == [None]


# git's options that come before the subcommand, with (True) or without a value.
_GIT_GLOBAL_OPTIONS = {
    "-C": True, "-c": True, "--git-dir": True, "--work-tree": True, "--namespace": True,
    "--config-env": True, "--exec-path": False, "--super-prefix": True, "-p": False,
    "--paginate": False, "-P": False, "--no-pager": False, "--bare": False,
    "--no-replace-objects": False, "--literal-pathspecs": False, "--glob-pathspecs": False,
    "--noglob-pathspecs": False, "--icase-pathspecs": False, "--no-optional-locks": False,
    "--no-advice": False, "--html-path": False, "--man-path": False, "--info-path": False,
}  # fmt: skip


def _canonical(words: list[str | None], *, configured: bool = False) -> list[str | None]:
    """`words` as a rule sees the program: its name without a path, and for git without
    the options before the subcommand, an alias set with `-c alias.X=...` expanded (any
    case: git's keys ignore it). An alias set where its value cannot be seen
    (`--config-env`, or `configured`: the environment sets git's config) may be any
    command."""
    if not words or words[0] is None:
        return words
    name = words[0].rsplit("/", 1)[-1]
    if name != "git":
        return [name, *words[1:]]
    aliases: dict[str, list[str | None]] = {}
    index = 1
    while index < len(words):
        word = words[index]
        if word is None or not word.startswith("-"):
            break
        option, equals, value = word.partition("=")
        takes_value = _GIT_GLOBAL_OPTIONS.get(option)
        if takes_value is None:
            break
        if takes_value and not equals:
            index += 1
            value = words[index] if index < len(words) else None
        if option in ("-c", "--config-env") and value and value.lower().startswith("alias."):
            alias, _, expansion = value[len("alias.") :].partition("=")
            aliases[alias.lower()] = [None]  # from a variable, or not split: unknown
            if option == "-c":
                with contextlib.suppress(ValueError):
                    aliases[alias.lower()] = shlex.split(expansion.lstrip("!"))
        index += 1
    rest = words[index:]
    if rest and rest[0] is not None:
        if rest[0].lower() in aliases:
            rest = [*aliases[rest[0].lower()], *rest[1:]]
        elif configured:
            rest = [None, *rest[1:]]
    return ["git", *rest]


def _only_denies(findings: list[Finding], from_file: bool) -> list[Finding]:
    return [f for f in findings if f.decision == "deny"] if from_file else findings


class _Judge:
    def __init__(self, workspace: Path, home: Path, environ: Mapping[str, str]) -> None:
        self.places = Places(workspace, home, environ)
        self.workspace = workspace
        self.home = home
        self.venv = bool(environ.get("VIRTUAL_ENV") or environ.get("CONDA_PREFIX"))

    def command(self, cmd: SimpleCommand) -> list[Finding]:
        name = cmd.words[0].value
        if name is None or cmd.words[0].glob:
            return self._computed_name(cmd)
        base = PurePosixPath(name).name
        args = list(cmd.words[1:])
        values = [w.value or "" for w in args]
        if base == "rm":
            return self._rm(cmd, args)
        if base == "find":
            return self._find_delete(cmd, args)
        if base.startswith("mkfs") or base in _FORMATTERS:
            return [Finding("deny", f"{base} formats or wipes a filesystem: {cmd.text}")]
        if base == "dd":
            targets = [Word(w.text, w.value[3:]) for w in args if (w.value or "").startswith("of=")]
            unknown = [w for w in args if w.value is None]
            return self._unknown_targets(cmd, unknown) + self._changes(
                cmd, [file_commands.Change(w, "dd writes", True) for w in targets]
            )
        if base == "tee":
            unknown = [w for w in args if w.value is None]
            return self._unknown_targets(cmd, unknown) + self._changes(
                cmd, file_commands.changes(base, args, cmd.fed, cmd.cwd)
            )
        if base in _FILE_COMMANDS:
            return self._changes(cmd, file_commands.changes(base, args, cmd.fed, cmd.cwd))
        if base in ("kill", "pkill", "killall", "killall5"):
            return self._signals(cmd, base, args)
        if base in ("chmod", "chown", "chgrp"):
            return self._recursive_mode(cmd, base, args)
        if (
            base in _POWER
            or (base in ("init", "telinit") and values[:1] in (["0"], ["6"]))
            or (base == "systemctl" and {"poweroff", "reboot", "halt", "kexec"} & set(values))
        ):
            return [Finding("deny", f"shuts down or restarts the machine: {cmd.text}")]
        if base == "git":
            return _git(cmd, args, self.places)
        return self._package_install(cmd, base, values)

    def redirect(self, redirect: Redirect) -> list[Finding]:
        if redirect.target.value is None:
            shown = f"{redirect.op} {redirect.target.text}"
            return [Finding("ask", f"output goes to a path only known at run time: {shown}")]
        verb = "appends to" if redirect.op in (">>", "&>>") else "overwrites"
        found = self.places.change(
            f"{redirect.op} {verb}", redirect.target, redirect.cwd, follow=True
        )
        return [] if found is None else [found]

    def effect(self, found: Found) -> list[Finding]:
        """Judge what interpreter code does (`shutil.rmtree(...)`, `os.kill(-1, 9)`)."""
        effect = found.effect
        if effect.kind == "tree":
            return [
                self.places.deletion(
                    effect.name, effect.target, found.cwd, from_file=found.from_file
                )
            ]
        if effect.kind == "signal":
            why = signals.every_process(effect.target.value or "")
            return [Finding("deny", f"{effect.name} {effect.target.text} {why}")] if why else []
        change = file_commands.Change(effect.target, f"{effect.name} {effect.verb}", effect.follow)
        return self._changes_at(found.cwd, [change])

    def _computed_name(self, cmd: SimpleCommand) -> list[Finding]:
        """A command whose name is only known at run time, given the arguments of a
        deletion (`$(printf '\\x72\\x6d') -rf ~`): refused, since few programs but rm
        take -r/-f and a path outside the workspace. Without that shape, the walker's
        "only known at run time" ask stands."""
        args = cmd.words[1:]
        flags = [w.text for w in args if _destructive_flag(w.value or "")]
        if not flags:
            return []
        for word in args:
            if word.value is None or word.value.startswith("-"):
                continue
            path, pattern = self.places.path(word, cmd.cwd)
            where = None if path is None else self.places.deleted_where(path, pattern, follow=False)
            if where is not None:
                why = (
                    f"a command whose name is only known at run time is given {' '.join(flags)} "
                    f"and {word.text} ({where}), the shape of a disguised deletion: {cmd.text}"
                )
                return [Finding("deny", why)]
        return []

    def _changes(self, cmd: SimpleCommand, changes: list[file_commands.Change]) -> list[Finding]:
        return self._changes_at(cmd.cwd, changes, cmd.via)

    def _changes_at(
        self, cwd: Path | None, changes: list[file_commands.Change], via: tuple[str, ...] = ()
    ) -> list[Finding]:
        findings = []
        for change in changes:
            how = change.how
            if via:
                command, _, verb = how.partition(" ")
                how = f"{command} (via {via[-1]}) {verb}"
            found = self.places.change(how, change.word, cwd, follow=change.follow)
            if found is not None:
                findings.append(found)
        return findings

    def _unknown_targets(self, cmd: SimpleCommand, words: list[Word]) -> list[Finding]:
        return [Finding("ask", f"{cmd.words[0].value} writes to a path only known at run time: "
                               f"{cmd.text}")] if words else []  # fmt: skip

    def _signals(self, cmd: SimpleCommand, base: str, args: list[Word]) -> list[Finding]:
        if base == "kill":
            pids = [*args, *(cmd.fed or ())]  # `echo -1 | xargs kill`
            return [Finding("deny", f"{why}: {cmd.text}") for why in signals.kill(pids)]
        why = signals.by_name(base, args)
        return [Finding("deny", f"{why}: {cmd.text}")] if why else []

    # -- deletion ----------------------------------------------------------------------

    def _rm(self, cmd: SimpleCommand, args: list[Word]) -> list[Finding]:
        flag = None
        operands: list[Word] = []
        options_done = False
        for word in args:
            value = word.value
            if not options_done and value == "--":
                options_done = True
            elif not options_done and value and value.startswith("-") and len(value) > 1:
                if value == "--recursive" or (value[1] != "-" and set(value[1:]) & {"r", "R"}):
                    flag = value
            else:
                operands.append(word)
        fed = cmd.fed or ()
        if flag is None:
            # In a folder only run time knows, a plain rm asks (`cd "$d" && rm -f *.o`):
            # `--approval full` lets it run, as it lets every ask.
            lost = next((w for w in [*operands, *fed] if in_unknown_folder(w, cmd.cwd)), None)
            asks = [] if lost is None else [
                Finding("ask", f"rm on {lost.text}, in a folder only known at run time: {cmd.text}")
            ]  # fmt: skip
            changes = [file_commands.Change(w, "rm deletes", False) for w in [*operands, *fed]]
            return asks + self._changes(cmd, changes)
        how = f"rm {flag}" + (f" (via {cmd.via[-1]})" if cmd.via else "")
        # The paths written out are judged even when more come at run time: xargs runs
        # `xargs rm -rf ~` once with no input at all.
        findings = [
            self.places.deletion(how, word, cmd.cwd, from_file=cmd.from_file)
            for word in [*operands, *fed]
        ]
        if cmd.fed == ():
            findings.append(Finding("ask", f"{how} on paths only known at run time: {cmd.text}"))
        return findings

    def _find_delete(self, cmd: SimpleCommand, args: list[Word]) -> list[Finding]:
        call = find_call(args)
        if not call.deletes:
            return []
        return [
            self.places.deletion("find -delete", under(r), cmd.cwd, from_file=cmd.from_file)
            for r in call.roots
        ]

    # -- permissions -------------------------------------------------------------------

    def _recursive_mode(self, cmd: SimpleCommand, base: str, args: list[Word]) -> list[Finding]:
        options = [w.value or "" for w in args if _is_option(w)]
        recursive = any(o == "--recursive" or (o[1:2] != "-" and "R" in o) for o in options)
        if not recursive:
            return []
        operands = [w for w in args if not _is_option(w)]
        if not any(o.startswith("--reference") for o in options):
            operands = operands[1:]  # the mode or owner
        findings = []
        for word in operands:
            path, _ = self.places.path(word, cmd.cwd)
            if path is None:
                findings.append(Finding("ask", f"{base} -R on {word.text}, a path only known "
                                               f"at run time"))  # fmt: skip
            elif self.places.is_system(path):
                findings.append(Finding("deny", f"{base} -R on {word.text} ({path}, a system "
                                                f"path)"))  # fmt: skip
        return findings

    # -- package installs --------------------------------------------------------------

    def _package_install(self, cmd: SimpleCommand, base: str, values: list[str]) -> list[Finding]:
        operands = [v for v in values if not v.startswith("-")]
        verb = operands[0] if operands else ""
        if re.fullmatch(r"python[\d.]*|pypy[\d.]*", base) and values[:2] == ["-m", "pip"]:
            return self._pip(cmd, values[2:])
        if re.fullmatch(r"pip[\d.]*", base):
            return self._pip(cmd, values)
        if base == "uv" and verb == "pip" and "--system" in values:
            return [Finding("ask", f"uv pip --system installs into the system Python: {cmd.text}")]
        if base in ("npm", "pnpm", "bun") and (
            {"-g", "--global", "--location=global"} & set(values)
        ):
            return [Finding("ask", f"{base} installs packages globally: {cmd.text}")]
        if base == "yarn" and verb == "global":
            return [Finding("ask", f"yarn global installs packages globally: {cmd.text}")]
        if base == "pacman" and any(re.match(r"-[SRU]", v) for v in values):
            return [Finding("ask", f"pacman changes system packages: {cmd.text}")]
        manager = _PACKAGE_ALIASES.get(base, base)
        if verb in _PACKAGE_VERBS.get(manager, ()):
            if base == "gem" and "--user-install" in values:
                return []
            return [Finding("ask", f"{base} {verb} changes system packages: {cmd.text}")]
        return []

    def _pip(self, cmd: SimpleCommand, values: list[str]) -> list[Finding]:
        verb = next((v for v in values if not v.startswith("-")), "")
        if verb not in ("install", "uninstall") or self.venv or "--user" in values:
            return []
        program = join_path(cmd.cwd, cmd.words[0].value or "")
        if (
            "/" in (cmd.words[0].value or "")
            and program is not None
            and self.places.inside(program)
        ):
            return []  # a virtualenv's own pip, e.g. .venv/bin/pip
        return [Finding("ask", f"pip {verb} outside a virtualenv changes the system Python: "
                               f"{cmd.text}")]  # fmt: skip


_FILE_COMMANDS = frozenset(
    {"unlink", "shred", "truncate", "cp", "mv", "install", "ln", "link", "rsync", "sed"}
)


def _is_option(word: Word) -> bool:
    return word.value is not None and word.value.startswith("-") and len(word.value) > 1


def _destructive_flag(value: str) -> bool:
    if value in ("--recursive", "--force", "--no-preserve-root", "--delete", "-delete"):
        return True
    return re.fullmatch(r"-[a-zA-Z]*[rRf][a-zA-Z]*", value) is not None


def _git_outside(
    cmd: SimpleCommand, sub: str, discards: bool, chdirs: list[Word], trees: list[Word],
    places: Places, *, repository_only: bool = False,
) -> Finding | None:  # fmt: skip
    """Refuse a git command that changes files outside the workspace: where it starts
    (the command's folder, then each `-C`) and its work tree and repository
    (`--work-tree`, `--git-dir`, GIT_WORK_TREE, GIT_DIR); `cd ~ && git clean -fdx` had
    passed. Where one is only known at run time, only what discards work is refused."""
    start = cmd.cwd
    for folder in chdirs:
        if folder.value is None:
            start = None
        elif folder.value:  # `git -C ''` stays where it is
            start = join_path(start, folder.value)
    named = [None if t.value is None else join_path(start, t.value) for t in trees]
    # add, commit, branch, tag: only a repository named elsewhere (--git-dir) is changed.
    for path in named if repository_only else [start, *named]:
        if path is None:
            # In a script on disk, as before the guard followed each folder: it may only
            # deny where the folder is known (`cd "$d" && git checkout -- .` runs).
            if discards and not cmd.from_file:
                return Finding("deny", f"git {sub} discards work in {UNKNOWN_FOLDER}: {cmd.text}")
            continue
        # Started in /tmp itself (`cd /tmp && git clone URL`), git changes what is in it.
        if places.inside(path, follow=True) or path in places.temp_roots:
            continue
        where = places.outside(path, None, follow=True)
        if where is not None:
            return Finding("deny", f"git {sub} changes files in {where}: {cmd.text}")
    return None


def _discards(sub: str, rest: list[str]) -> bool:
    """Whether the git subcommand throws away files or changes in the work tree."""
    short = "".join(v[1:] for v in rest if v.startswith("-") and not v.startswith("--"))
    if sub == "clean":
        return "f" in short or "--force" in rest
    if sub == "reset":
        return "--hard" in rest
    if sub == "checkout":
        return "f" in short or bool({"--force", "--", "."} & set(rest))
    if sub == "restore":  # all but `--staged` alone restores the work tree's files
        return not ({"--staged", "-S"} & set(rest)) or bool({"--worktree", "-W"} & set(rest))
    return False


# git subcommands that change, create or discard files where git works. add, commit,
# branch and tag write only inside the repository's .git, so `cd .. && git add -A` from
# a workspace inside a repository passes.
_GIT_REPOSITORY_ONLY = frozenset({"add", "commit", "branch", "tag"})
_GIT_CHANGES = frozenset(
    {"checkout", "restore", "reset", "clean", "stash", "rm", "mv", "apply", "am", "merge",
     "pull", "rebase", "switch", "cherry-pick", "revert", "read-tree", "checkout-index",
     "init", "clone", "submodule", "worktree"}
)  # fmt: skip


def _git(cmd: SimpleCommand, args: list[Word], places: Places) -> list[Finding]:
    i = 0
    chdirs: list[Word] = []  # -C: where git starts
    trees: list[Word] = []  # --work-tree, --git-dir and their variables: where it works
    repositories: list[Word] = []  # --git-dir and GIT_DIR
    while i < len(args) and (args[i].value or "").startswith("-"):
        option, equals, inline = (args[i].value or "").partition("=")
        if option in ("-C", "--work-tree", "--git-dir"):
            given = args[i + 1] if i + 1 < len(args) else Word("", "")
            folder = Word(args[i].text, inline) if equals else given
            (chdirs if option == "-C" else trees).append(folder)
            if option == "--git-dir":
                repositories.append(folder)
        takes_value = args[i].value in git_config.GLOBAL_VALUE_OPTIONS
        i += 2 if takes_value else 1
    if i >= len(args):
        return []
    values = [w.value or "" for w in args]
    sub, rest = values[i], values[i + 1 :]
    trees += [word for name, word in cmd.environment if name in ("GIT_WORK_TREE", "GIT_DIR")]
    repositories += [word for name, word in cmd.environment if name == "GIT_DIR"]
    discards = _discards(sub, rest)
    if sub in _GIT_CHANGES:
        found = _git_outside(cmd, sub, discards, chdirs, trees, places)
    elif sub in _GIT_REPOSITORY_ONLY:
        found = _git_outside(cmd, sub, discards, chdirs, repositories, places, repository_only=True)
    else:
        found = None
    if found is not None:
        return [found]
    short = "".join(v[1:] for v in rest if v.startswith("-") and not v.startswith("--"))
    if sub == "push" and (
        "f" in short
        or any(v.startswith(("--force", "--mirror")) for v in rest)
        or any(v.startswith("+") for v in rest)
    ):
        return [Finding("ask", f"git push --force can overwrite remote history: {cmd.text}")]
    if sub == "reset" and discards:
        return [Finding("ask", f"git reset --hard discards uncommitted work: {cmd.text}")]
    if sub == "clean" and discards:
        return [Finding("ask", f"git clean -f deletes untracked files: {cmd.text}")]
    key = git_config.key_set(rest) if sub == "config" else None
    if key is not None and git_config.runs_program(key):
        return [Finding("deny", f"git config sets {key}, which makes git run a program later, "
                                f"outside what lathe checks (for one command, use git -c "
                                f"{key}=...): {cmd.text}")]  # fmt: skip
    return []
