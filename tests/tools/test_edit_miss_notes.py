"""What a missed edit says, reproduced with the real CLI:

- a note naming another file holding old_string won over the target's own match with
  whitespace ignored: app.py indented with a tab was sent to legacy_app.py, the same
  code indented with spaces, and never shown its tabs;
- the note named a file where old_string occurs only inside a word (`a = 1` in
  `a = 10`), an edit `_cut_word` would then refuse.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply
from tests.tools.helpers import call_error

from lathe.tools.base import ToolContext
from lathe.tools.edit import EditTool

edit = EditTool()
SPACED = "def total(xs):\n    return sum(xs)"


def test_the_targets_own_whitespace_match_wins_over_another_file(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def total(xs):\n\treturn sum(xs)\n")
    (ws / "legacy_app.py").write_text(SPACED + "\n")
    change = {"path": "app.py", "old_string": SPACED, "new_string": SPACED + " + 1"}
    fake_openai.enqueue(Reply(calls=[Call("edit", change)]), Reply("Could not."))
    done = lathe_run(fake_openai, ws, tmp_path, "Add one to the total")
    assert done.returncode == 0, done.stderr
    last = fake_openai.chat_bodies()[-1]["messages"]
    (result,) = [m["content"] for m in last if m["role"] == "tool"]
    assert "It matches lines 1-2 if whitespace and indentation are ignored" in result
    assert "     2\t\treturn sum(xs)" in result  # the file's tab, shown
    assert "legacy_app.py" not in result
    assert (ws / "app.py").read_text() == "def total(xs):\n\treturn sum(xs)\n"


def _files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)


async def test_a_file_holding_the_text_only_inside_a_word_is_not_named(ctx: ToolContext) -> None:
    _files(ctx.workspace, {"g.py": "b = 2\n", "f.py": "a = 10\nxa = 1\n"})
    error = await call_error(edit, ctx, path="g.py", old_string="a = 1", new_string="a = 5")
    assert "f.py" not in error
    assert error.startswith("old_string was not found in g.py.")


async def test_a_file_holding_the_text_as_whole_words_is_named(ctx: ToolContext) -> None:
    _files(ctx.workspace, {"g.py": "b = 2\n", "f.py": "a = 10\n\na = 1\n"})
    error = await call_error(edit, ctx, path="g.py", old_string="a = 1", new_string="a = 5")
    assert error == (
        "old_string was not found in g.py. The old_string does occur in f.py (line 3): did "
        "you mean that file?"
    )
    # text that begins or ends with a non-word character may sit against a word
    _files(ctx.workspace, {"h.py": "call(x)\n"})
    error = await call_error(edit, ctx, path="g.py", old_string="(x)", new_string="(y)")
    assert "does occur in h.py (line 1)" in error


async def test_another_file_is_still_named_when_the_target_has_nothing_like_it(
    ctx: ToolContext,
) -> None:
    _files(ctx.workspace, {"app.py": "import os\n", "lib.py": SPACED + "\n"})
    error = await call_error(edit, ctx, path="app.py", old_string=SPACED, new_string="x")
    assert error == (
        "old_string was not found in app.py. The old_string does occur in lib.py (line 1): "
        "did you mean that file?"
    )
