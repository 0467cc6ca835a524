"""`sessions list` counts the tokens the runs spent, as `sessions show` and `lathe stats`
do, through the real CLI against the fake server: it had counted the replies alone and
left out the compaction's summary requests (list 32,590 where show said 37,015)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_compaction_spend_counted import log_reader
from tests.fakes.openai_server import FakeOpenAIServer

from lathe.session import ENTRY_ADAPTER, RunEndEntry, SessionStore
from lathe.session.index import INDEX_NAME
from lathe.types import Usage

from .cli_runs import lathe, only_session
from .helpers import reply, user

SUMMARY = Usage(input_tokens=50_000, output_tokens=1_000)  # a compaction's request
SUMMARY_USAGE = {"prompt_tokens": 50_000, "completion_tokens": 1_000, "total_tokens": 51_000}


def _compacting_run(home: Path, workspace: Path, server: FakeOpenAIServer):
    server.responder = log_reader(workspace, 4, SUMMARY_USAGE)
    return lathe(home, workspace, "run", "--model", "gpt-4o", "--base-url", server.base_url,
                  "-C", str(workspace), "-c", "models.gpt-4o.context_window=12000",
                  "Read the logs")  # fmt: skip


def _run_ends(path: Path) -> int:
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return sum(sum(e["usage"].values()) for e in lines if e["type"] == "run_end")


def _listed_tokens(home: Path, workspace: Path) -> int:
    listed = lathe(home, workspace, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    [row] = listed.stdout.splitlines()
    return int(row.split("\t")[4].replace(",", ""))


def test_list_counts_the_summary_requests_the_runs_spent(
    home: Path, workspace: Path, fake_openai: FakeOpenAIServer
) -> None:
    result = _compacting_run(home, workspace, fake_openai)
    assert result.returncode == 0, result.stderr
    assert any(not body.get("tools") for body in fake_openai.chat_bodies()), "no compaction"
    path = only_session(SessionStore(home), workspace)
    spent = _run_ends(path)
    assert spent >= SUMMARY_USAGE["total_tokens"]

    assert _listed_tokens(home, workspace) == spent  # the index the run's close wrote
    (path.parent / INDEX_NAME).unlink()
    assert _listed_tokens(home, workspace) == spent  # parsed in full
    shown = lathe(home, workspace, "sessions", "show", path.stem[-12:])
    assert f"{spent:,} tokens" in shown.stdout


def _from_scratch(store: SessionStore, workspace: Path) -> dict:
    (store.project_dir(workspace) / INDEX_NAME).unlink(missing_ok=True)
    return {s.id: s for s in store.list(workspace)}


def test_run_ends_count_what_the_replies_leave_out_however_the_listing_reads(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        session.append_message(user("the task"))
        session.append_message(reply("one", tokens=100))  # 110 tokens
    listed = store.list(workspace)[0]  # from the index the close wrote
    assert listed.tokens == 110  # a run going on: its replies count
    run_usage = Usage(input_tokens=100 + SUMMARY.input_tokens, output_tokens=10 + 1_000)

    with session.path.open("ab") as handle:  # a run that ended, appended behind the index
        end = RunEndEntry(id="end1", parent=session.entries[-1].id, status="verified",
                          turns=1, usage=run_usage)  # fmt: skip
        handle.write(ENTRY_ADAPTER.dump_json(end) + b"\n")
    grown = {s.id: s for s in store.list(workspace)}
    assert grown[session.id].tokens == run_usage.total
    assert grown == _from_scratch(store, workspace)

    with store.open(session.id) as going_on:  # the next run, its close into the index
        going_on.append_message(user("more"))
        going_on.append_message(reply("two", tokens=20))
    closed = {s.id: s for s in store.list(workspace)}
    assert closed[session.id].tokens == run_usage.total + 22
    assert closed == _from_scratch(store, workspace)


def test_replies_an_end_does_not_cover_still_count(store: SessionStore, workspace: Path) -> None:
    # A run killed before its end, then one that went on with it and ended: the end says
    # only what the second run spent.
    with store.create(workspace, "m") as session:
        session.append_message(user("the task"))
        session.append_message(reply("killed here", tokens=1_000))
        session.append_message(user("go on"))
        session.append_message(reply("done", tokens=10))
        session.append(RunEndEntry(status="verified", turns=1, usage=Usage(input_tokens=10)))

    assert store.list(workspace)[0].tokens == 1_100 + 11
    assert _from_scratch(store, workspace)[session.id].tokens == 1_100 + 11
