"""What the model and the progress lines are told an edit changed: the lines it changed,
however often the file's other lines repeat."""

from __future__ import annotations

import json

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply

from lathe.tools.files import unified_diff


def test_a_one_line_edit_in_a_file_of_repeated_rows_is_shown_as_one_line(tmp_path, fake_openai):
    # difflib's heuristic for frequent lines ("autojunk") had shown it as a rewrite of all
    # 1,000 lines: `+997 -997`, a diff cut after 60 lines; 3.2 MB of events at 400k lines.
    ws = tmp_path / "ws"
    ws.mkdir()
    rows = [f"{i % 5},yes,ok\n" for i in range(1000)]
    rows.insert(4, "TARGET,1\n")
    (ws / "d.csv").write_text("".join(rows))
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "d.csv", "old_string": "TARGET,1",
                                   "new_string": "TARGET,2"})]),
        Reply("Done."),
    )  # fmt: skip

    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Bump it")

    assert done.returncode == 0, done.stderr
    [finished] = [
        e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "tool_finished"
    ]
    assert finished["summary"].endswith("+1 -1"), finished["summary"]
    shown = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "@@ -2,7 +2,7 @@" in shown[0] and "-TARGET,1\n+TARGET,2" in shown[0], shown[0]


def test_the_diff_keeps_its_line_numbers_and_no_newline_marks(tmp_path):
    old = "".join(f"line {n}\n" for n in range(1, 41)) + "last"
    new = old.replace("line 20\n", "line twenty\n").replace("last", "final")
    diff = unified_diff("f.txt", old, new, context=2)
    assert diff.splitlines() == [
        "--- a/f.txt", "+++ b/f.txt",
        "@@ -18,5 +18,5 @@", " line 18", " line 19", "-line 20", "+line twenty", " line 21",
        " line 22",
        "@@ -39,3 +39,3 @@", " line 39", " line 40", "-last", "\\ No newline at end of file",
        "+final", "\\ No newline at end of file",
    ]  # fmt: skip
    assert unified_diff("f.txt", "", "new\n").splitlines()[2] == "@@ -0,0 +1 @@"
    assert unified_diff("f.txt", "same\n", "same\n") == ""


def test_a_change_is_not_aligned_into_the_lines_alike_at_its_ends(tmp_path):
    # Compared with its context lines, difflib had aligned `c -> d` as `+c +d ... -c -c`:
    # a hunk without trailing context that `patch -F0` refused, counted as +2 -2.
    old = "b\nc\nc\nc\nc\nc\nc\nb\nc\nb\n"
    diff = unified_diff("f", old, old.replace("b\nc\n", "b\nd\n", 1), context=3)
    changed = [line for line in diff.splitlines()[3:] if line[:1] in "+-"]
    assert changed == ["-c", "+d"], diff
