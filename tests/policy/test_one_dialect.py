"""One deny rule has one meaning: the gate, the search tools and bash in the sandbox agree.

Reproduced on landed main: with `--deny 'read(.env)'`, `grep -r KEY sub` and a Python
one-liner printed `sub/.env`, because the gate's hand-written glob, the sandbox's
`Path.glob` masking and ripgrep's globs each read the pattern their own way. The
expected sets below are gitignore's semantics, written out by hand.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lathe.exec.bwrap import BubblewrapExecutor, check_bubblewrap
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet
from lathe.tools.base import Limits, ToolContext
from lathe.tools.files import FileState
from lathe.tools.glob import GlobTool
from lathe.tools.grep import GrepTool

PATHS = (
    ".env", "sub/.env", "sub/deep/.env", "envy.txt", "top.txt", "sub/top.txt",
    "secrets/a.txt", "sub/secrets/b.txt", "src/a.key", "src/x/a.key", "k.pem",
    "a/b/k.pem", "private/p.txt", "a/private/p.txt", "ok.txt", "#notes",
)  # fmt: skip

# pattern -> the paths it denies
TABLE = {
    ".env": {".env", "sub/.env", "sub/deep/.env"},
    "/top.txt": {"top.txt"},
    "top.txt": {"top.txt", "sub/top.txt"},
    "secrets/": {"secrets/a.txt", "sub/secrets/b.txt"},
    "secrets": {"secrets/a.txt", "sub/secrets/b.txt"},
    "src/*.key": {"src/a.key"},
    "src/**": {"src/a.key", "src/x/a.key"},
    "*.pem": {"k.pem", "a/b/k.pem"},
    "**/private/**": {"private/p.txt", "a/private/p.txt"},
    "a/**/k.pem": {"a/b/k.pem"},
    "./top.txt": {"top.txt"},
    "./secrets/": {"secrets/a.txt"},
    "#notes": {"#notes"},
}

_STATUS = check_bubblewrap()
needs_bwrap = pytest.mark.skipif(not _STATUS.available, reason=_STATUS.message)


def content(path: str) -> str:
    return f"CONTENT<{path}>"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for path in PATHS:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content(path) + "\n")
    return root


def _ctx(workspace: Path, pattern: str) -> ToolContext:
    return ToolContext(
        workspace=workspace,
        executor=BubblewrapExecutor(workspace),
        spill_dir=workspace.parent / "spill",
        file_state=FileState(),
        limits=Limits(),
        deny_read=(pattern,),
    )


@pytest.mark.parametrize("pattern", sorted(TABLE))
def test_the_gate_denies_exactly_the_matching_paths(workspace, pattern):
    policy = Policy(
        mode=Mode.AUTO,
        rules=RuleSet.from_strings(deny=[f"read({pattern})"]),
        workspace=workspace,
        home=Path.home(),
        sandboxed=True,
    )
    denied = {p for p in PATHS if policy.decide("read", {"path": p}).action == "deny"}
    assert denied == TABLE[pattern]


@pytest.mark.parametrize("pattern", sorted(TABLE))
async def test_grep_and_glob_leave_out_exactly_the_matching_paths(workspace, pattern):
    ctx = _ctx(workspace, pattern)
    grep = GrepTool()
    found = await grep.execute(grep.parameters(pattern="CONTENT<"), ctx)
    shown = {line.split(":")[0] for line in found.content.splitlines() if ":" in line}
    assert shown == set(PATHS) - TABLE[pattern]

    glob = GlobTool()
    listed = await glob.execute(glob.parameters(pattern="*"), ctx)
    assert set(listed.content.splitlines()) - {""} == set(PATHS) - TABLE[pattern]


@needs_bwrap
@pytest.mark.parametrize("pattern", sorted(TABLE))
async def test_bash_in_the_sandbox_cannot_read_exactly_the_matching_paths(workspace, pattern):
    executor = BubblewrapExecutor(workspace, deny_read=[pattern])
    # Names built at run time, so only the mounts can stop it (not the gate).
    command = (
        "grep -rh 'CONTENT<' . 2>/dev/null; "
        "python3 -c \"import sys\nfor p in sys.argv[1:]:\n  try: print(open(p).read(), end='')\n"
        '  except OSError: pass" ' + " ".join(PATHS)
    )
    result = await executor.run(
        command, cwd=workspace, timeout=30, max_output_bytes=100_000,
        spill_dir=workspace.parent / "spill",
    )  # fmt: skip
    printed = {line for line in result.output.splitlines() if line.startswith("CONTENT<")}
    readable = {content(p) for p in set(PATHS) - TABLE[pattern]}
    assert printed == readable, result.output


@needs_bwrap
async def test_a_denied_file_in_git_history_does_not_leak_through_git(workspace):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "all"], check=True)
    from lathe.policy.history import denied_in_history

    assert denied_in_history(workspace, [".env"]) == [".env", "sub/.env", "sub/deep/.env"]
    executor = BubblewrapExecutor(workspace, deny_read=[".env"], hide_git=True)

    result = await executor.run(
        "git show HEAD:.env; git log -p | grep -c 'CONTENT<'; cat .git/HEAD",
        cwd=workspace, timeout=30, max_output_bytes=100_000,
        spill_dir=workspace.parent / "spill",
    )  # fmt: skip

    assert content(".env") not in result.output
    assert "ref: refs/heads" not in result.output


def test_a_file_created_between_commands_is_found_in_a_folder_listed_before(workspace):
    """Folders are listed again only when their mtime moved: a new file moves it."""
    import os
    import time

    from lathe.patterns import PathPatterns

    past = time.time() - 60
    for folder, _, _ in os.walk(workspace):
        os.utime(folder, (past, past))
    patterns = PathPatterns(["*.secret"])
    assert patterns.existing(workspace) == []

    (workspace / "sub" / "deep" / "new.secret").write_text("x")

    assert patterns.existing(workspace) == [workspace / "sub" / "deep" / "new.secret"]


def _git_repo(workspace):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True)
    return git


def test_a_denied_file_staged_then_unstaged_still_counts(workspace):
    from lathe.policy.history import denied_in_history

    git = _git_repo(workspace)
    subprocess.run([*git, "add", ".env"], check=True)
    subprocess.run([*git, "rm", "-q", "--cached", ".env"], check=True)

    assert denied_in_history(workspace, [".env"]) == [".env"]


def test_the_history_check_runs_no_program_the_repository_names(workspace, tmp_path):
    from lathe.policy.history import denied_in_history

    git = _git_repo(workspace)
    ran = tmp_path / "GPG_RAN"
    program = tmp_path / "evil-gpg"
    # Signs when asked to (so the commit below is signed); any other call is the
    # verification `git log` would run when log.showSignature is set.
    program.write_text(
        "#!/bin/sh\n"
        "cat > /dev/null\n"  # git writes the data to sign first: read it, or git sees EPIPE
        'case "$*" in *-bsau*) echo "[GNUPG:] SIG_CREATED " >&2;'
        " printf -- '-----BEGIN PGP SIGNATURE-----\\nx\\n-----END PGP SIGNATURE-----\\n';"
        " exit 0;; esac\n"
        f"touch {ran}\nexit 1\n"
    )
    program.chmod(0o755)
    subprocess.run([*git, "config", "gpg.program", str(program)], check=True)
    subprocess.run([*git, "add", "ok.txt"], check=True)
    subprocess.run([*git, "commit", "-S", "-qm", "signed"], check=True)
    subprocess.run([*git, "log", "--show-signature", "-1"], capture_output=True, check=False)
    assert ran.exists()  # the trap works: a plain `git log --show-signature` springs it
    ran.unlink()
    subprocess.run([*git, "config", "log.showSignature", "true"], check=True)
    subprocess.run([*git, "config", "core.fsmonitor", f"touch {ran}; false"], check=True)

    denied_in_history(workspace, [".env"])

    assert not ran.exists()


def test_a_repository_git_refuses_to_read_counts_as_maybe(workspace):
    import os

    from lathe.policy.history import denied_in_history

    if os.geteuid() != 0:
        pytest.skip("needs root to give the repository to another user")
    _git_repo(workspace)
    subprocess.run(["chown", "-R", "12345", str(workspace)], check=True)

    assert denied_in_history(workspace, [".env"]) is None
