"""`lathe batch`'s run folder and task list through the real CLI against the scripted
fake model: a run folder inside a task's repository, credentials in --base-url, a last
result line missing its newline, and names and lines lathe did not write itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.batch.tasks import BROKEN, VERIFY, batch_env, fix, make_task, result_lines, run_batch
from tests.fakes.openai_server import ErrorReply
from tests.service.scripts import by_marker

from lathe.config.secrets import masked_url


def test_a_run_folder_inside_the_tasks_repo_is_left_out_of_its_copies(tmp_path, fake_openai):
    # The second task's copy held the first one's diff, and the run folder changed the
    # repository's hash: the same command was refused as "a different task list".
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(BROKEN)
    (project / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    listed = project / "tasks.jsonl"
    listed.write_text("".join(
        json.dumps({"id": name, "repo": ".", "task": f"Task {name}: fix add", "verify": VERIFY})
        + "\n" for name in ("one", "two")
    ))  # fmt: skip
    fake_openai.responder = by_marker({"Task one": fix("one"), "Task two": fix("two")})
    run = project / "runs" / "1"
    (tmp_path / "tmp").mkdir()
    env = {**batch_env(tmp_path), "TMPDIR": str(tmp_path / "tmp")}  # the kept copies

    first = run_batch(tmp_path, listed, run, fake_openai, "--workers", "1", "--keep",
                      "--max-total-wall", "1s", env=env)  # fmt: skip
    assert first.returncode == 1, first.stderr  # stopped after the first task
    again = run_batch(tmp_path, listed, run, fake_openai, "--workers", "1", "--keep", env=env)

    assert again.returncode == 0, again.stderr
    lines = {line["id"]: line for line in result_lines(run)}
    assert sorted(lines) == ["one", "two"] and lines["two"]["solved"]
    assert not (Path(lines["two"]["workspace"]) / "runs" / "1").exists()
    assert "runs/" not in (run / lines["two"]["diff_path"]).read_text()


def test_an_earlier_run_folder_inside_the_tasks_repo_is_left_out_of_its_copies(
    tmp_path, fake_openai
):
    # Only the batch's own run folder was left out: a second batch into runs/2 gave each
    # task a copy holding runs/1, the first batch's diffs and transcripts: the answers.
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(BROKEN)
    (project / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    listed = project / "tasks.jsonl"
    listed.write_text(
        json.dumps({"id": "one", "repo": ".", "task": "Task one: fix add", "verify": VERIFY}) + "\n"
    )
    fake_openai.responder = by_marker({"Task one": fix("one")})
    (tmp_path / "tmp").mkdir()
    env = {**batch_env(tmp_path), "TMPDIR": str(tmp_path / "tmp")}  # the kept copies
    first = run_batch(tmp_path, listed, project / "runs" / "1", fake_openai, env=env)
    assert first.returncode == 0, first.stderr
    (project / "data").mkdir()  # a folder of the project's own with such names stays
    (project / "data" / "manifest.json").write_text("{}\n")
    (project / "data" / "results.jsonl").write_text("{}\n")

    second = run_batch(tmp_path, listed, project / "runs" / "2", fake_openai, "--keep", env=env)

    assert second.returncode == 0, second.stderr
    (line,) = result_lines(project / "runs" / "2")
    copy = Path(line["workspace"])
    assert line["solved"] and (copy / "calc.py").exists()
    assert not (copy / "runs" / "1").exists()
    assert (copy / "data" / "manifest.json").exists()


def test_credentials_in_the_base_url_stay_out_of_the_manifest(tmp_path, fake_openai):
    # Written as given, at the top and in the settings; a resume must still tell two
    # endpoints apart, and a manifest written so before must still resume.
    tasks = make_task(tmp_path / "tasks", "t1").parent
    fake_openai.responder = by_marker({"Task t1": fix("t1")})
    url = fake_openai.base_url.replace("http://", "http://batch:s3cret-password-1234@")
    other = url.replace("s3cret", "d1ffer")  # the same when masked: sk-…1234
    run = tmp_path / "run"

    done = run_batch(tmp_path, tasks, run, fake_openai, "--base-url", url)

    assert done.returncode == 0, done.stderr
    text = (run / "manifest.json").read_text()
    assert "s3cret-password-1234" not in text
    manifest = json.loads(text)
    assert manifest["base_url"] == manifest["settings"]["base_url"] == masked_url(url)
    requests = len(fake_openai.requests)
    assert run_batch(tmp_path, tasks, run, fake_openai, "--base-url", url).returncode == 0
    refused = run_batch(tmp_path, tasks, run, fake_openai, "--base-url", other)
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith("lathe: ") and "--base-url" in line, line
    assert "s3cret" not in line and "d1ffer" not in line, line
    # As an earlier lathe wrote it: the URL itself, no hash.
    manifest["base_url"] = manifest["settings"]["base_url"] = url
    del manifest["base_url_digest"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert run_batch(tmp_path, tasks, run, fake_openai, "--base-url", url).returncode == 0
    assert run_batch(tmp_path, tasks, run, fake_openai, "--base-url", other).returncode == 2
    assert len(fake_openai.requests) == requests  # nothing ran again


def test_a_refused_run_keeps_a_last_result_line_missing_its_newline(tmp_path, fake_openai):
    # Opening the folder cut the line before the settings were checked: a refused run
    # (exit 2) lost a finished task's result.
    tasks = make_task(tmp_path / "tasks", "t1").parent
    fake_openai.responder = by_marker({"Task t1": fix("t1")})
    run = tmp_path / "run"
    assert run_batch(tmp_path, tasks, run, fake_openai).returncode == 0
    whole = (run / "results.jsonl").read_bytes()
    (run / "results.jsonl").write_bytes(whole[:-1])
    requests = len(fake_openai.requests)

    refused = run_batch(tmp_path, tasks, run, fake_openai, "--max-turns", "3")
    assert refused.returncode == 2, refused.stderr
    assert (run / "results.jsonl").read_bytes() == whole[:-1]
    again = run_batch(tmp_path, tasks, run, fake_openai)

    assert again.returncode == 0, again.stderr
    assert (run / "results.jsonl").read_bytes() == whole  # given its newline, not cut
    assert len(fake_openai.requests) == requests  # the task did not run again


def test_a_file_name_that_is_not_utf8_in_a_tasks_repo_is_copied_like_any(tmp_path, fake_openai):
    folder = make_task(tmp_path / "tasks", "t1")
    (folder / "repo").chmod(0o755)
    (folder / "repo" / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    fake_openai.responder = by_marker({"Task t1": fix("t1")})

    done = run_batch(tmp_path, tmp_path / "tasks", tmp_path / "run", fake_openai)

    assert done.returncode == 0, done.stderr
    assert result_lines(tmp_path / "run")[0]["solved"] is True


def test_a_task_folder_whose_name_is_not_utf8_is_one_line(tmp_path, fake_openai):
    # It ran, then writing the manifest (and its result) failed with a traceback.
    make_task(tmp_path / "tasks", "t1").rename(tmp_path / "tasks" / os.fsdecode(b"t\xff"))

    done = run_batch(tmp_path, tmp_path / "tasks", tmp_path / "run", fake_openai)

    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lathe: ") and "t\\xff" in line and "rename" in line, line
    assert fake_openai.chat_bodies() == []


def test_retry_errors_past_a_result_line_whose_id_is_no_string(tmp_path, fake_openai):
    # `{"id": [...]}` edited in by hand: --retry-errors ended in a traceback (unhashable).
    tasks = make_task(tmp_path / "tasks", "t1").parent
    fake_openai.responder = by_marker({"Task t1": [ErrorReply(401, "bad key")]})
    run = tmp_path / "run"
    assert run_batch(tmp_path, tasks, run, fake_openai).returncode == 3
    with (run / "results.jsonl").open("a") as results:
        results.write('{"id": ["t1"], "status": "error"}\n')
    fake_openai.responder = by_marker({"Task t1": fix("t1")})

    retried = run_batch(tmp_path, tasks, run, fake_openai, "--retry-errors")

    assert retried.returncode == 0, retried.stderr
    assert "Traceback" not in retried.stderr
    assert [line["status"] for line in result_lines(run) if line["id"] == "t1"] == ["solved"]
    assert '{"id": ["t1"], "status": "error"}\n' in (run / "results.jsonl").read_text()


def test_the_archive_ray_ships_leaves_the_run_folder_out(tmp_path):
    # What the local pool's copy leaves out, Ray's archive of the repository must too.
    import io
    import tarfile

    from lathe.batch.task_run import pack

    repo = tmp_path / "project"
    (repo / "runs" / "1" / "diffs").mkdir(parents=True)
    (repo / "runs" / "1" / "diffs" / "one.diff").write_text("+a + b\n")
    (repo / "runs" / "other.txt").write_text("kept\n")
    (repo / "calc.py").write_text(BROKEN)

    packed = pack(str(repo), str(repo / "runs" / "1"))

    with tarfile.open(fileobj=io.BytesIO(packed)) as archive:
        assert sorted(archive.getnames()) == [".", "./calc.py", "./runs", "./runs/other.txt"]
