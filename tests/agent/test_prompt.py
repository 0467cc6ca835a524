"""The system prompt: the method, AGENTS.md, the real file list (real ripgrep, git-ignore
honoured) and, for a tiny workspace, every file's text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lathe.agent.prompt import list_files, system_prompt

TOOLS = ["read", "edit", "bash"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_app.py").write_text("from app import add\n")
    (root / "my notes.txt").write_text("a name with a space\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("generated\n")
    return root


def test_file_list_uses_real_names_and_leaves_ignored_files_out(project: Path) -> None:
    assert list_files(project) == [".gitignore", "app.py", "my notes.txt", "tests/test_app.py"]
    prompt = system_prompt(project, TOOLS, verify_command="pytest -q").text
    assert "Files in the workspace (4):\n.gitignore\napp.py\nmy notes.txt\n" in prompt
    assert "build/out.txt" not in prompt
    assert "lathe runs `pytest -q` itself" in prompt
    assert "return a - b" not in prompt  # no snapshot unless a budget is given


def test_a_tiny_workspace_is_included_whole(project: Path) -> None:
    prompt = system_prompt(project, TOOLS, verify_command=None, snapshot_max_bytes=4096).text
    assert "----- app.py -----\ndef add(a, b):\n    return a - b\n" in prompt
    assert "----- tests/test_app.py -----\nfrom app import add\n" in prompt
    assert prompt.endswith("----- end of files -----")
    # The part that changes with the workspace stays last, after the stable method.
    assert prompt.index("How to work") < prompt.index("Workspace root") < prompt.index("-----")


def test_a_workspace_over_the_budget_is_only_listed(project: Path) -> None:
    # The budget counts what the snapshot adds: each file's header line and its text.
    total = sum(
        len(f"----- {name} -----\n{(project / name).read_text().rstrip()}\n".encode()) + 1
        for name in list_files(project)
    )
    fits = system_prompt(project, TOOLS, verify_command=None, snapshot_max_bytes=total)
    assert "-----" in fits.text and fits.has_snapshot
    over = system_prompt(project, TOOLS, verify_command=None, snapshot_max_bytes=total - 1)
    assert "-----" not in over.text and not over.has_snapshot
    assert "app.py" in over.text


def test_binary_and_non_utf8_files_are_listed_but_not_inlined(project: Path) -> None:
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (project / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    prompt = system_prompt(project, TOOLS, verify_command=None, snapshot_max_bytes=4096).text
    assert "logo.png" in prompt and "latin.txt" in prompt
    assert "----- logo.png" not in prompt and "----- latin.txt" not in prompt
    assert "----- app.py -----" in prompt


def test_instruction_files_come_in_their_own_section_and_never_in_the_snapshot(
    project: Path,
) -> None:
    (project / "AGENTS.md").write_text("Run tests with `make test`.\n")
    prompt = system_prompt(
        project, TOOLS, verify_command=None, snapshot_max_bytes=8192,
        instructions="INSTRUCTIONS", memory="MEMORY", instruction_names=["AGENTS.md"],
    ).text  # fmt: skip
    assert "\n\nINSTRUCTIONS\n\nMEMORY\n\nWorkspace root:" in prompt
    assert "def add(a, b)" in prompt  # the snapshot is there...
    assert "make test" not in prompt  # ... without the instruction file


def test_protected_paths_are_said_up_front(project: Path) -> None:
    prompt = system_prompt(
        project, TOOLS, verify_command=None, no_edit=["tests/**"], no_read=[".env", "*.pem"]
    ).text
    assert "- no changes to: tests/**\n- no reading of: .env, *.pem" in prompt
    assert "protects" not in system_prompt(project, TOOLS, verify_command=None).text


def test_the_snapshot_never_copies_secrets_and_marks_protected_files(project: Path) -> None:
    (project / ".env").write_text("API_KEY=hunter2\n")
    (project / "config").mkdir()
    (project / "config" / "secret.txt").write_text("s3cret\n")
    (project / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    prompt = system_prompt(
        project,
        TOOLS,
        verify_command=None,
        snapshot_max_bytes=4096,
        no_edit=["tests/**"],
        no_read=["config/secret.txt"],
    ).text
    assert ".env" in prompt and "server.pem" in prompt  # listed by name
    assert "hunter2" not in prompt and "s3cret" not in prompt and "PRIVATE KEY" not in prompt
    assert "----- tests/test_app.py (read-only: the user forbids changing it) -----" in prompt
    assert "----- app.py -----" in prompt
