"""Skills end to end through `python -m lathe run` against the scripted fake server:
found in the three folders, listed in the system prompt within the budget, read with
the `skill` tool, and a SKILL.md whose front matter cannot be read (or that is missing, or
a directory) skipped with a notice naming it; a skill relinked during the run serves
nothing its link now leads to outside the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.fakes.user_config import user_config_file


def lathe_run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({
        "OPENAI_API_KEY": "sk-test",
        "LATHE_HOME": str(tmp_path / "home"),
        "LATHE_CONFIG": user_config_file(tmp_path / "user" / "config.toml"),
    })  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def write_skill(root: Path, folder: str, front: str, body: str = "") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}")
    return path


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("a project\n")
    return ws


def _system(server) -> str:
    return server.chat_bodies()[0]["messages"][0]["content"]


def _tool_names(server) -> list[str]:
    return [t["function"]["name"] for t in server.chat_bodies()[0]["tools"]]


def test_skills_from_the_three_folders_are_listed_and_one_is_read(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    write_skill(
        ws / ".lathe" / "skills", "release", "name: release\ndescription: Cut a release",
        "1. Bump the version.\n2. Tag it.\n",
    )  # fmt: skip
    (ws / ".lathe" / "skills" / "release" / "checklist.txt").write_text("sign the tag\n")
    write_skill(
        tmp_path / "user" / "skills", "review", "name: review\ndescription: 'Review a diff'"
    )
    write_skill(
        ws / ".claude" / "skills", "pdf",
        'name: pdf\ndescription: "Fill PDF forms"\nallowed-tools: Read, Bash\nmetadata:\n'
        "  version: 2",
    )  # fmt: skip
    fake_openai.enqueue(
        Reply(calls=[Call("skill", {"name": "release"})]),
        Reply(calls=[Call("skill", {"name": "release", "file": "checklist.txt"})]),
        Reply("Done."),
    )

    result = lathe_run(fake_openai, ws, tmp_path, "cut a release")

    assert result.returncode == 0, result.stderr
    system = _system(fake_openai)
    assert "- release: Cut a release\n- review: Review a diff\n- pdf: Fill PDF forms" in system
    assert "1. Bump the version." not in system  # the body waits for the tool
    assert "skill" in _tool_names(fake_openai)
    bodies = fake_openai.chat_bodies()
    read = bodies[1]["messages"][-1]
    assert read["role"] == "tool"
    assert f"folder: {ws / '.lathe' / 'skills' / 'release'}" in read["content"]
    assert "1. Bump the version.\n2. Tag it." in read["content"]
    assert "checklist.txt" in read["content"]
    assert bodies[2]["messages"][-1]["content"].strip() == "sign the tag"


def test_over_the_budget_fewer_skills_are_listed_and_the_tool_lists_them_all(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    for number in range(40):
        write_skill(
            ws / ".lathe" / "skills", f"s{number:02}",
            f"name: s{number:02}\ndescription: {'does a thing ' * 8}",
        )  # fmt: skip
    fake_openai.enqueue(Reply(calls=[Call("skill", {})]), Reply("Done."))

    # 128k tokens * 0.002 * 3 bytes is about 770 bytes: a few of the 40 fit.
    result = lathe_run(
        fake_openai, ws, tmp_path, "-c", "skills.prompt_share=0.002", "-c",
        "models.m.context_window=128000", "-c", "models.m.provider=openai", "look",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    system = _system(fake_openai)
    listed = [line for line in system.splitlines() if line.startswith("- s")]
    assert 0 < len(listed) < 40
    section = system[system.index("Skills (") :].split("\n\n")[0]
    assert len(section.encode()) <= 128000 * 0.002 * 3
    assert f"({40 - len(listed)} more skills are not listed here" in section
    listing = fake_openai.chat_bodies()[1]["messages"][-1]["content"]
    assert listing.startswith("Skills (40):")
    assert "- s39: does a thing" in listing


def test_a_skill_with_bad_front_matter_is_skipped_with_a_notice_naming_it(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    skills = ws / ".lathe" / "skills"
    bad = write_skill(skills, "folded", "name: folded\ndescription: >\n  two lines")
    nameless = write_skill(skills, "nameless", "description: no name")
    write_skill(skills, "good", "name: good\ndescription: fine")
    fake_openai.enqueue(Reply("Done."))

    result = lathe_run(fake_openai, ws, tmp_path, "--json", "look")

    assert result.returncode == 0, result.stderr
    notices = [
        e["message"] for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "notice"
    ]
    assert [n for n in notices if n.startswith("skill ")] == [
        f"skill {bad} skipped: line 3: '>' values (YAML blocks, lists, maps) are not read; "
        "write the value as plain text on one line",
        f"skill {nameless} skipped: the front matter has no name",
    ]
    assert "- good: fine" in _system(fake_openai)
    assert "folded" not in _system(fake_openai)


def test_a_workspace_without_skills_has_no_skill_tool(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Done."))

    result = lathe_run(fake_openai, ws, tmp_path, "look")

    assert result.returncode == 0, result.stderr
    assert "skill" not in _tool_names(fake_openai)
    assert "Skills (" not in _system(fake_openai)


def test_a_skill_a_read_rule_covers_is_neither_listed_nor_read(tmp_path, fake_openai):
    # `read .claude/skills/deploy/SKILL.md` was refused, `skill(name=deploy)` was not.
    ws = _workspace(tmp_path)
    write_skill(
        ws / ".claude" / "skills", "deploy", "name: deploy\ndescription: Ship it (DESC-HIDDEN)",
        "The prod password is BODY-HIDDEN.\n",
    )  # fmt: skip
    write_skill(ws / ".lathe" / "skills", "lint", "name: lint\ndescription: Lint the code")
    fake_openai.enqueue(Reply(calls=[Call("skill", {"name": "deploy"})]), Reply("Done."))

    done = lathe_run(
        fake_openai, ws, tmp_path, "--approval", "full", "--deny", "read(.claude/)", "Ship"
    )

    assert done.returncode == 0, done.stderr
    sent = json.dumps(fake_openai.chat_bodies())
    assert "DESC-HIDDEN" not in sent and "BODY-HIDDEN" not in sent
    assert "Lint the code" in _system(fake_openai)


def test_a_project_skill_linked_out_of_the_workspace_is_named_when_skipped(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    write_skill(tmp_path / "team" / "skills", "deploy", "name: deploy\ndescription: Ship it")
    (ws / ".lathe").mkdir()
    (ws / ".lathe" / "skills").symlink_to(tmp_path / "team" / "skills")
    fake_openai.enqueue(Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "Ship")
    assert done.returncode == 0, done.stderr
    assert "Ship it" not in json.dumps(fake_openai.chat_bodies()[0])
    real = (tmp_path / "team" / "skills" / "deploy" / "SKILL.md").resolve()
    assert f"SKILL.md skipped: it leads to {real}, outside the workspace" in done.stderr


def _tool_results(server) -> list[str]:
    return [m["content"] for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize(
    ("relink", "call", "deny"),
    [
        ("ln -sf {secret}/id_rsa .claude/skills/x/SKILL.md", {"name": "x"}, ()),
        ("rm -r .claude/skills/x && ln -s {secret} .claude/skills/x",
         {"name": "x", "file": "id_rsa"}, ()),
        ("ln -sf /proc/self/environ .claude/skills/x/SKILL.md", {"name": "x"}, ()),
        ("ln -sf ../../../.env .claude/skills/x/SKILL.md", {"name": "x"},
         ("--deny", "read(.env)")),
    ],
    ids=["SKILL.md", "folder", "environ", "read-rule"],
)  # fmt: skip
def test_a_skill_relinked_during_the_run_does_not_serve_what_it_now_leads_to(
    tmp_path, fake_openai, relink, call, deny
):
    # The model linked SKILL.md (or its folder) to ~/.ssh/id_rsa with bash, then
    # skill(x) returned the private key that `read` refused: the check was made only
    # when the skills were found.
    ws = _workspace(tmp_path)
    write_skill(ws / ".claude" / "skills", "x", "name: x\ndescription: Do x", "Steps.\n")
    secret = tmp_path / "ssh"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE-KEY-TEXT\n")
    (ws / ".env").write_text("TOKEN=DOTENV-TEXT\n")
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": relink.format(secret=secret)})]),
        Reply(calls=[Call("skill", call)]),
        Reply("Done."),
    )

    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", *deny, "do x")

    assert done.returncode == 0, done.stderr
    sent = json.dumps(fake_openai.chat_bodies())
    assert "PRIVATE-KEY-TEXT" not in sent and "DOTENV-TEXT" not in sent
    assert "sk-test" not in sent  # lathe's own environment
    result = _tool_results(fake_openai)[-1]
    assert result.startswith("Error: the skill 'x'") and len(result.splitlines()) == 1, result
    reason = "a read rule denies" if deny else "outside the workspace"
    assert reason in result, result


def test_a_skill_linked_to_another_file_of_the_workspace_is_still_served(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    write_skill(ws / ".claude" / "skills", "x", "name: x\ndescription: Do x", "Old steps.\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "x.md").write_text("---\nname: x\ndescription: Do x\n---\nNew steps.\n")
    relink = f"ln -sf {ws / 'docs' / 'x.md'} .claude/skills/x/SKILL.md"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": relink})]),
        Reply(calls=[Call("skill", {"name": "x"})]),
        Reply("Done."),
    )

    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "do x")

    assert done.returncode == 0, done.stderr
    assert "New steps." in _tool_results(fake_openai)[-1]


def test_a_skill_md_that_is_not_utf8_is_read_as_instruction_files_are(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    path = ws / ".lathe" / "skills" / "cafe" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        "---\nname: cafe\ndescription: Menu du café\n---\nCrème brûlée.\n".encode("cp1252")
    )
    fake_openai.enqueue(Reply(calls=[Call("skill", {"name": "cafe"})]), Reply("Done."))

    done = lathe_run(fake_openai, ws, tmp_path, "--json", "look")

    assert done.returncode == 0, done.stderr
    assert "- cafe: Menu du café" in _system(fake_openai)
    assert "Crème brûlée." in _tool_results(fake_openai)[-1]


def test_a_skill_folder_without_a_skill_md_file_is_named_when_skipped(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    skills = ws / ".lathe" / "skills"
    (skills / "empty").mkdir(parents=True)
    (skills / "nested" / "SKILL.md").mkdir(parents=True)
    write_skill(skills, "good", "name: good\ndescription: fine")
    fake_openai.enqueue(Reply("Done."))

    result = lathe_run(fake_openai, ws, tmp_path, "--json", "look")

    assert result.returncode == 0, result.stderr
    notices = [
        e["message"] for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "notice"
    ]
    assert [n for n in notices if n.startswith("skill ")] == [
        f"skill {skills / 'empty' / 'SKILL.md'} skipped: there is no such file",
        f"skill {skills / 'nested' / 'SKILL.md'} skipped: it is a directory, not a file",
    ]
    assert "- good: fine" in _system(fake_openai)
