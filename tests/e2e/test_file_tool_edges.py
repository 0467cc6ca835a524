"""File tools at the edges of a real repository, each reproduced with the real CLI:

- a path too long for the file system crashed the whole run with a traceback;
- a blind edit (or one page of a long file) licensed a whole-file write, which cut a
  600-line file to 2 lines.
"""

from __future__ import annotations

import json
import os
import unicodedata

import pytest
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _results(server) -> list[str]:
    """The tool results lathe sent back, in order."""
    last = server.chat_bodies()[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


@pytest.mark.parametrize("approval", ["full", "auto"])
def test_a_path_too_long_for_the_file_system_is_an_error_result(tmp_path, fake_openai, approval):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "a" * 300 + ".txt"})]), Reply("Nothing to read.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", approval, "Read it")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (result,) = _results(fake_openai)
    assert "File name too long" in result


def test_a_blind_edit_then_a_write_keeps_the_file(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "".join(f"line_{n} = {n}\n" for n in range(600))
    (ws / "app.py").write_text(original)
    fake_openai.enqueue(
        Reply(
            calls=[
                Call(
                    "edit",
                    {"path": "app.py", "old_string": "line_3 = 3\n", "new_string": "line_3 = 30\n"},
                )
            ]
        ),
        Reply(calls=[Call("write", {"path": "app.py", "content": "x = 1\ny = 2\n"})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Tidy app.py")
    assert done.returncode == 0, done.stderr
    assert (ws / "app.py").read_text() == original.replace("line_3 = 3\n", "line_3 = 30\n")
    refused = _results(fake_openai)[-1]
    assert "you have not read all of it" in refused
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["is_error"] for e in events if e["type"] == "tool_finished"] == [False, True]


def test_utf8_with_one_stray_byte_is_read_and_edited_as_utf8(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "# café\nname = 'José'\n".encode() + b"raw = '\xff'\n"
    (ws / "u8.py").write_bytes(original)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "u8.py"})]),
        Reply(
            calls=[
                Call(
                    "edit",
                    {
                        "path": "u8.py",
                        "old_string": "name = 'José'",
                        "new_string": "name = 'crème'",
                    },
                )
            ]
        ),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Rename")
    assert done.returncode == 0, done.stderr
    shown, edited = _results(fake_openai)
    assert "name = 'José'" in shown and "raw = '\ufffd'" in shown
    assert "UTF-8 but for 1 byte that is not" in shown
    assert edited.startswith("Edited u8.py")
    assert (ws / "u8.py").read_bytes() == original.replace("José".encode(), "crème".encode())


@pytest.mark.parametrize("finish_reason", ["tool_calls", "stop"])
def test_an_edit_whose_arguments_are_cut_mid_string_is_not_run(
    tmp_path, fake_openai, finish_reason
):
    """Servers that cut a reply at their own limit may still say "stop": the string the
    model was writing is cut, so closing it would write half a line."""
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "def total(xs):\n    return 0\n"
    (ws / "calc.py").write_text(original)
    cut = '{"path": "calc.py", "old_string": "    return 0\\n", "new_string": "    return su'
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "calc.py"})]),
        Reply(calls=[Call("edit", cut)], finish_reason=finish_reason),
        Reply("Gave up."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Fix total")
    assert done.returncode == 0, done.stderr
    assert (ws / "calc.py").read_text() == original
    refused = _results(fake_openai)[-1]
    assert "cut off" in refused


def test_two_calls_a_server_gave_one_id_both_run(tmp_path, fake_openai):
    """Some servers number every call "call_0" and tell them apart by index only: the
    two were merged into one call whose arguments were not JSON, and neither ran."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    fake_openai.enqueue(
        Reply(
            calls=[
                Call("read", {"path": "a.txt"}, id="call_0"),
                Call("read", {"path": "b.txt"}, id="call_0"),
            ]
        ),
        Reply("Both read."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Read both")
    assert done.returncode == 0, done.stderr
    last = fake_openai.chat_bodies()[-1]["messages"]
    (asked,) = [m for m in last if m.get("tool_calls")]
    ids = [c["id"] for c in asked["tool_calls"]]
    assert len(set(ids)) == 2
    results = [m for m in last if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == ids
    assert "alpha" in results[0]["content"] and "beta" in results[1]["content"]


@pytest.mark.parametrize("approval", ["full", "auto"])
def test_a_rule_holds_for_a_path_that_is_a_symlink(tmp_path, fake_openai, approval):
    # The rules were matched against the link's target only: `.env` read freely.
    ws = tmp_path / "ws"
    (ws / "config").mkdir(parents=True)
    (ws / "config" / "local.values").write_text("API_KEY=sk-live-SECRET123\n")
    (ws / ".env").symlink_to("config/local.values")
    (ws / "vendor").mkdir()
    (ws / "vendor" / "lib.py").write_text("def f():\n    return 1\n")
    (ws / "settings.py").symlink_to("vendor/lib.py")
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": ".env"})]),
        Reply(calls=[Call("grep", {"pattern": "API_KEY", "path": ".env"})]),
        Reply(calls=[Call("bash", {"command": "cat .env"})]),
        Reply(calls=[Call("bash", {"command": "cd config && cat ../.env"})]),
        Reply(calls=[Call("edit", {"path": "settings.py", "old_string": "return 1",
                                   "new_string": "return 2"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(
        fake_openai, ws, tmp_path, "--approval", approval,
        "--deny", "read(.env)", "--deny", "edit(settings.py)", "Look around",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = _results(fake_openai)
    assert len(results) == 5
    assert not any("SECRET123" in result for result in results), results
    assert all("denied" in result or "rule" in result for result in results), results
    assert (ws / "vendor" / "lib.py").read_text() == "def f():\n    return 1\n"


def test_an_edit_whose_new_string_leaves_code_out_with_a_placeholder_is_refused(
    tmp_path, fake_openai
):
    # write refused a "# ... existing code ..." line; edit applied it and 20 lines went.
    ws = tmp_path / "ws"
    ws.mkdir()
    body = "".join(f"    step_{n}()\n" for n in range(20))
    original = f"def main():\n    setup()\n{body}    return 0\n"
    (ws / "app.py").write_text(original)
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "app.py", "old_string": original,
                                   "new_string": "def main():\n    setup()\n"
                                   "    # ... existing code ...\n    return 1\n"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Return 1 from main")
    assert done.returncode == 0, done.stderr
    assert (ws / "app.py").read_text() == original
    (refused,) = _results(fake_openai)
    assert "placeholder" in refused and "# ..." in refused


def test_lines_with_stray_bytes_keep_their_bytes_through_write_and_edit(tmp_path, fake_openai):
    # read shows a stray byte as U+FFFD and says edit and write keep it: write turned it
    # into U+FFFD's three bytes, and edit could never match a line holding one. (More
    # UTF-8 letters than stray bytes: with fewer, the file is taken for latin-1.)
    ws = tmp_path / "ws"
    ws.mkdir()
    original = (
        "café, naïve résumé\n".encode() + b"raw = b'\xff'  # sentinel\nx = 1\nend = b'\xfe\xfd'\n"
    )
    (ws / "u8.py").write_bytes(original)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "u8.py"})]),
        Reply(calls=[Call("write", {"path": "u8.py", "content": "café, naïve résumé\n"
                                    "raw = b'\ufffd'  # sentinel\nx = 2\n"
                                    "end = b'\ufffd\ufffd'\n"})]),
        Reply(calls=[Call("edit", {"path": "u8.py", "old_string": "raw = b'\ufffd'  # sentinel",
                                   "new_string": "raw = b'\ufffd'  # kept"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Change x")
    assert done.returncode == 0, done.stderr
    results = _results(fake_openai)
    assert results[1].startswith("Overwrote u8.py") and results[2].startswith("Edited u8.py")
    assert (ws / "u8.py").read_bytes() == (
        "café, naïve résumé\n".encode() + b"raw = b'\xff'  # kept\nx = 2\nend = b'\xfe\xfd'\n"
    )


def test_a_full_page_of_read_is_never_cut_by_the_output_limit(tmp_path, fake_openai):
    # The footer took the page past the limit, the generic cap cut a line from its
    # middle, and read still counted that line as seen: a write then dropped it.
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [f"value_{n:04d} = compute({n}, 'some padding text to make it longer')\n"
             for n in range(1000)]  # fmt: skip
    (ws / "data.py").write_text("".join(lines))
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "data.py"})]), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Read it")
    assert done.returncode == 0, done.stderr
    (page,) = _results(fake_openai)
    assert "omitted" not in page
    last = int(page.split("[Showing lines 1-")[1].split()[0])
    assert all(f"value_{n:04d} =" in page for n in range(last))


def test_a_refused_edit_of_a_file_a_read_rule_hides_tells_nothing_of_its_content(
    tmp_path, fake_openai
):
    # The hint "old_string is not in .env but in probe.txt" answered, guess by guess,
    # what .env holds.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("API_KEY=sk-7f3a\n")
    (ws / "probe.txt").write_text("API_KEY=sk-7f3a API_KEY=sk-0\n")
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": ".env", "old_string": "API_KEY=sk-7",
                                   "new_string": "x"})]),
        Reply(calls=[Call("edit", {"path": ".env", "old_string": "API_KEY=sk-0",
                                   "new_string": "x"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(
        fake_openai, ws, tmp_path, "--approval", "full", "--deny", "read(.env)", "Change it"
    )
    assert done.returncode == 0, done.stderr
    in_it, not_in_it = _results(fake_openai)
    assert "probe.txt" not in not_in_it
    assert in_it == not_in_it


def test_a_lone_surrogate_escaped_in_a_calls_arguments_does_not_end_the_run(tmp_path, fake_openai):
    # "\ud83d" (half an emoji, escaped by the model) crashed `--json` with a traceback.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("msg = 'hi'\n")
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "app.py", "old_string": "msg = 'hi'",
                                   "new_string": "msg = 'hi \ud83d'"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Greet")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (ws / "app.py").read_text() == "msg = 'hi \ufffd'\n"
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "run_finished"


def test_an_edit_of_a_long_line_is_reported_in_bounded_size(tmp_path, fake_openai):
    # A version bump in a 1 MB one-line JSON file sent 26 KB of diff to the model and
    # 2.2 MB of events; a miss in a minified file showed all of it as "the whole file".
    ws = tmp_path / "ws"
    ws.mkdir()
    entries = ", ".join(f'"key{n}": "{"v" * 40}"' for n in range(20_000))
    (ws / "data.json").write_text('{"version": "1.0", ' + entries + "}\n")
    (ws / "min.js").write_text("var a=1;" * 4000 + "\n")
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "data.json", "old_string": '"version": "1.0"',
                                   "new_string": '"version": "1.1"'})]),
        Reply(calls=[Call("edit", {"path": "min.js", "old_string": "var b=2;",
                                   "new_string": "var b=3;"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Bump it")
    assert done.returncode == 0, done.stderr
    edited, missed = _results(fake_openai)
    assert edited.startswith("Edited data.json") and len(edited) < 6_000
    assert missed.startswith("Error:") and len(missed) < 6_000
    assert len(done.stdout) < 100_000
    assert '"version": "1.1"' in (ws / "data.json").read_text()


def test_an_edit_keeps_the_files_owner_and_its_hard_links(tmp_path, fake_openai):
    # The rename put a new file in place: owned by whoever ran lathe (root in a
    # container over a bind-mounted repository) and no longer the other name's file.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("x = 1\n")
    os.link(ws / "app.py", ws / "same.py")
    (ws / "owned.py").write_text("y = 1\n")
    as_root = os.geteuid() == 0
    if as_root:
        os.chown(ws / "owned.py", 1000, 1000)
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "app.py", "old_string": "x = 1",
                                   "new_string": "x = 2"})]),
        Reply(calls=[Call("edit", {"path": "owned.py", "old_string": "y = 1",
                                   "new_string": "y = 2"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Bump")
    assert done.returncode == 0, done.stderr
    assert (ws / "same.py").read_text() == "x = 2\n"
    assert (ws / "owned.py").read_text() == "y = 2\n"
    if as_root:
        info = (ws / "owned.py").stat()
        assert (info.st_uid, info.st_gid) == (1000, 1000)


def test_repairing_a_trailing_comma_never_changes_text_inside_a_string(tmp_path, fake_openai):
    # The repair ran over the whole JSON text: `\s{2,}` in new_string was written `\s{2}`.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "clean.py").write_text("import re\nSPACES = None\n")
    arguments = (
        '{"path": "clean.py", "old_string": "SPACES = None", '
        '"new_string": "SPACES = re.compile(r\\"\\\\s{2,}\\")  # [x, y,]",}'
    )
    fake_openai.enqueue(Reply(calls=[Call("edit", arguments)]), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Compile the pattern")
    assert done.returncode == 0, done.stderr
    assert (ws / "clean.py").read_text() == (
        'import re\nSPACES = re.compile(r"\\s{2,}")  # [x, y,]\n'
    )


@pytest.mark.parametrize("depth", [300, 5000])
def test_arguments_nested_too_deep_are_an_error_result_not_a_crash(tmp_path, fake_openai, depth):
    # Depth 300 broke the event's serialisation, deeper a RecursionError: a traceback
    # and no run_finished.
    ws = tmp_path / "ws"
    ws.mkdir()
    nested = "[" * depth + "]" * depth
    arguments = '{"path": "a.txt", "content": "x", "extra": ' + nested + "}"
    fake_openai.enqueue(Reply(calls=[Call("write", arguments)]), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Write it")
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [finished] = [e for e in events if e["type"] == "tool_finished"]
    assert finished["is_error"] and "nested" in finished["output"]
    assert events[-1]["type"] == "run_finished"


def test_a_write_never_replaces_lines_the_output_cap_cut_from_a_read(tmp_path, fake_openai):
    # Stray bytes counted 1 byte when read sized its page and 3 (U+FFFD) once sent: the
    # cap cut the page's middle, the file counted as seen whole, and a 2-line `write`
    # replaced 301 lines the model had seen 52 of.
    ws = tmp_path / "ws"
    ws.mkdir()
    rows = [f"row_{i:03d} = '".encode() + b"\xe9" * 50 + b"'" for i in range(300)]
    original = b"\n".join(["# caf\u00e9 data".encode(), *rows]) + b"\n"
    (ws / "d.py").write_bytes(original)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "d.py"})]),
        Reply(
            calls=[Call("write", {"path": "d.py", "content": "# caf\u00e9 data\nrow_000 = 'x'\n"})]
        ),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Tidy d.py")
    assert done.returncode == 0, done.stderr
    assert (ws / "d.py").read_bytes() == original


def test_a_file_with_a_name_near_the_length_limit_can_be_written_and_edited(tmp_path, fake_openai):
    # The temporary file beside it was named `.<name>.<hex>.lathe-tmp`: 20 bytes past a
    # legal 240-byte name, "File name too long".
    ws = tmp_path / "ws"
    ws.mkdir()
    name = "n" * 237 + ".py"
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": name, "content": "x = 1\n"})]),
        Reply(calls=[Call("edit", {"path": name, "old_string": "x = 1", "new_string": "x = 2"})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Make the module")
    assert done.returncode == 0, done.stderr
    assert (ws / name).read_text() == "x = 2\n"


def test_a_cp1252_file_with_a_pair_that_looks_like_utf8_stays_cp1252(tmp_path, fake_openai):
    # "„Gruß“" holds DF 93, a valid UTF-8 pair: the file was taken for UTF-8 with stray
    # bytes, and an edit wrote UTF-8 into it ("Müller" became "MÃ¼ller").
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "greeting = '„Gruß“ aus Köln'\nname = 'X'\n".encode("cp1252")
    (ws / "g.py").write_bytes(original)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "g.py"})]),
        Reply(
            calls=[Call("edit", {"path": "g.py", "old_string": "'X'", "new_string": "'Müller'"})]
        ),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Name him")
    assert done.returncode == 0, done.stderr
    assert (ws / "g.py").read_bytes() == original.replace(b"'X'", "'Müller'".encode("cp1252"))


def test_an_old_string_not_found_in_a_big_file_is_answered_at_once(tmp_path, fake_openai):
    # Looking for the most similar region compared characters pairwise: 200 lines not
    # in a 20,000-line file blocked the run for minutes, past its --timeout.
    import random

    ws = tmp_path / "ws"
    ws.mkdir()
    chance = random.Random(1)
    (ws / "big.py").write_text("".join(
        f"    value_{i} = compute(alpha_{i % 97}, beta_{i % 89}) + {chance.randint(0, 10**6)}\n"
        for i in range(20_000)
    ))  # fmt: skip
    missing = "\n".join(f"    valu_{i} = compute(alpha_{i}, gamma)" for i in range(200))
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "big.py", "old_string": missing, "new_string": "x"})]),
        Reply("Could not find it."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--timeout", "60s", "Edit")
    assert done.returncode == 0, done.stderr
    told = json.dumps(fake_openai.chat_bodies()[-1]["messages"])
    assert "old_string" in told and "not found" in told.lower()


def test_a_write_that_changes_a_line_holding_a_stray_byte_is_refused(tmp_path, fake_openai):
    # Only a line written back exactly as read showed it got its byte back: a changed
    # comment on the line turned the byte into U+FFFD's three bytes, with no word.
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "café, naïve résumé\n".encode() + b"sep = '\xa7'  # section\nx = 1\n"
    (ws / "s.py").write_bytes(original)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "s.py"})]),
        Reply(calls=[Call("write", {"path": "s.py", "content": "café, naïve résumé\n"
                                    "sep = '\ufffd'  # the section sign\nx = 1\n"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Comment")
    assert done.returncode == 0, done.stderr
    assert (ws / "s.py").read_bytes() == original
    told = json.dumps(fake_openai.chat_bodies()[-1]["messages"])
    assert "Use edit for the lines around it" in told


def test_a_crlf_file_whose_last_line_ends_in_lf_keeps_its_endings(tmp_path, fake_openai):
    # Counted as mixed, its endings were not kept: an inserted line took LF and its
    # anchor lost its CR, and a `write` turned every line LF.
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"@echo off\r\nset A=1\r\nset B=2\r\necho done\n"
    (ws / "a.bat").write_bytes(original)
    (ws / "b.bat").write_bytes(original)
    insert = {"path": "a.bat", "old_string": "set A=1", "new_string": "set A=1\nset C=3"}
    rewrite = "@echo off\nset A=1\nset B=3\necho done\n"
    fake_openai.enqueue(
        Reply(calls=[Call("edit", insert), Call("read", {"path": "b.bat"})]),
        Reply(calls=[Call("write", {"path": "b.bat", "content": rewrite})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Set C")
    assert done.returncode == 0, done.stderr
    assert (
        ws / "a.bat"
    ).read_bytes() == b"@echo off\r\nset A=1\r\nset C=3\r\nset B=2\r\necho done\n"
    assert (ws / "b.bat").read_bytes() == b"@echo off\r\nset A=1\r\nset B=3\r\necho done\n"


@pytest.mark.parametrize(
    ("in_file", "named"), [("cafe\u0301", "U+0301"), ("zero\u200bwidth", "U+200B")]
)
def test_an_old_string_differing_only_in_invisible_characters_names_them(
    tmp_path, fake_openai, in_file, named
):
    # The "most similar region" looked exactly like old_string: the model could not see
    # the combining accent or the zero-width space it had to copy.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "t.py").write_text(f"name = '{in_file}'\n")
    typed = unicodedata.normalize("NFC", in_file).replace("\u200b", "")
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "t.py", "old_string": f"name = '{typed}'",
                                   "new_string": "name = 'x'"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Rename")
    assert done.returncode == 0, done.stderr
    told = json.dumps(fake_openai.chat_bodies()[-1]["messages"], ensure_ascii=False)
    assert named in told, told[-600:]


def test_a_utf8_file_with_a_bom_and_a_stray_byte_is_text(tmp_path, fake_openai):
    # "bom.txt is a binary file" from read and edit alike: with a BOM, one byte that is
    # not UTF-8 made the whole file binary.
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"\xef\xbb\xbfname = 'Jos\xc3\xa9'\nsep = '\xa7'\n"
    (ws / "bom.txt").write_bytes(original)
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "bom.txt", "old_string": "Jos\u00e9",
                                   "new_string": "Ana"})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Rename")
    assert done.returncode == 0, done.stderr
    assert (ws / "bom.txt").read_bytes() == b"\xef\xbb\xbfname = 'Ana'\nsep = '\xa7'\n"


def test_a_grep_match_on_a_line_holding_a_form_feed_stays_one_result(tmp_path, fake_openai):
    # Results were split wherever Python sees a line break (form feed, U+2028): part of
    # the match came without its path and line number.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("alpha\x0cbeta needle\nother\u2028needle too\n")
    fake_openai.enqueue(Reply(calls=[Call("grep", {"pattern": "needle"})]), Reply("Found."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Find the needle")
    assert done.returncode == 0, done.stderr
    (result,) = _results(fake_openai)
    rows = [row for row in result.split("\n") if "needle" in row]
    assert len(rows) == 2 and all(row.startswith("f.txt:") for row in rows), result


def test_an_insert_sent_again_is_not_applied_twice(tmp_path, fake_openai):
    # new_string held old_string, so the same call sent again (a retry, or after its
    # result was pruned) matched again and inserted the line a second time.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text("import os\n\nprint(os.getcwd())\n")
    insert = {"path": "m.py", "old_string": "import os\n", "new_string": "import os\nimport sys\n"}
    fake_openai.enqueue(
        Reply(calls=[Call("edit", insert)]), Reply(calls=[Call("edit", insert)]), Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Import sys")
    assert done.returncode == 0, done.stderr
    assert (ws / "m.py").read_text() == "import os\nimport sys\n\nprint(os.getcwd())\n"
    assert "already reads as new_string" in _results(fake_openai)[-1]


def test_a_write_puts_back_each_stray_byte_line_at_its_own_place(tmp_path, fake_openai):
    # Lines 2 and 4 show alike (each byte as U+FFFD): written back as shown, both got
    # line 2's byte, the first line that showed so.
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "# café naïve résumé\n".encode() + b"MARK = '\xa7'\nx = 1\nMARK = '\xb6'\n"
    (ws / "s.py").write_bytes(original)
    content = "# café naïve résumé\nMARK = '\ufffd'\nx = 2\nMARK = '\ufffd'\n"
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "s.py"})]),
        Reply(calls=[Call("write", {"path": "s.py", "content": content})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Set x to 2")
    assert done.returncode == 0, done.stderr
    assert (ws / "s.py").read_bytes() == original.replace(b"x = 1", b"x = 2")


def test_a_moved_line_that_shows_like_two_is_refused_not_guessed(tmp_path, fake_openai):
    # Moved away from its place, a line showing as two lines that differ in their
    # stray byte cannot be told apart: the first one's byte was written.
    ws = tmp_path / "ws"
    ws.mkdir()
    original = "# café naïve résumé\n".encode() + b"MARK = '\xa7'\nx = 1\nMARK = '\xb6'\n"
    (ws / "s.py").write_bytes(original)
    content = "# café naïve résumé\nMARK = '\ufffd'\nMARK = '\ufffd'\nx = 1\n"
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "s.py"})]),
        Reply(calls=[Call("write", {"path": "s.py", "content": content})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Group the marks")
    assert done.returncode == 0, done.stderr
    assert (ws / "s.py").read_bytes() == original
    refused = _results(fake_openai)[-1]
    assert "line 2 of the new content shows as lines 2 and 4 of s.py do" in refused


def test_a_file_mixing_line_endings_keeps_each_untouched_lines_ending(tmp_path, fake_openai):
    # An insert took the CR off its anchor line, an old_string over a CRLF/LF/CRLF run
    # wrote all three back LF, and a write of one changed line made all twelve LF (the
    # diff showed every line rewritten). A new line takes the ending of the line it
    # replaces, or of the line before it when added.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_bytes(b"a = 1\r\nb = 2\r\nc = 3\nd = 4\r\ne = 5\r\n")
    twelve = b"".join(b"line %d\r\n" % n for n in range(1, 9)) + b"lf line\n"
    twelve += b"line 10\r\nline 11\r\nline 12\r\n"
    (ws / "r.txt").write_bytes(twelve)
    (ws / "w.txt").write_bytes(twelve)
    insert = {"path": "m.py", "old_string": "b = 2", "new_string": "b = 2\nbb = 22"}
    run = {"path": "r.txt", "old_string": "line 8\nlf line\nline 10\n",
           "new_string": "line 8\nLF line\nline 10\n"}  # fmt: skip
    content = twelve.decode().replace("\r\n", "\n").replace("line 11", "line 11 changed")
    fake_openai.enqueue(
        Reply(calls=[Call("edit", insert), Call("edit", run), Call("read", {"path": "w.txt"})]),
        Reply(calls=[Call("write", {"path": "w.txt", "content": content})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Change them")
    assert done.returncode == 0, done.stderr
    assert (ws / "m.py").read_bytes() == b"a = 1\r\nb = 2\r\nbb = 22\r\nc = 3\nd = 4\r\ne = 5\r\n"
    assert (ws / "r.txt").read_bytes() == twelve.replace(b"lf line", b"LF line")
    assert (ws / "w.txt").read_bytes() == twelve.replace(b"line 11", b"line 11 changed")
    diff = _results(fake_openai)[-1].split("@@")[-1]
    assert [row for row in diff.split("\n") if row.startswith(("+", "-"))] == [
        "-line 11\r",
        "+line 11 changed\r",
    ]
