"""`lathe schema events` prints the schema every event line follows, and its `version`
moves with it: a change to an event or a field fails here until EVENTS_SCHEMA_VERSION is
bumped and tests/data/event_schema.json records the new fingerprint."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lathe.events import (
    EVENTS_SCHEMA_VERSION,
    AgentEvent,
    AssistantReply,
    ChildEvent,
    RunError,
    RunFinished,
    RunStarted,
    RunStatus,
    TextDelta,
    ToolFinished,
)
from lathe.types import AssistantMessage, ToolCall, Usage
from lathe.ui.schema_cmd import event_schema

FINGERPRINT = Path(__file__).resolve().parent / "data" / "event_schema.json"


@pytest.fixture(scope="module")
def printed() -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "lathe", "schema", "events"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _event_types() -> list[str]:
    union = typing.get_args(AgentEvent)[0]  # Annotated[Union[...], Field(...)]
    return [cls.model_fields["type"].default for cls in typing.get_args(union)]


def test_the_printed_schema_names_every_event_and_its_version(printed):
    assert printed == event_schema()
    assert printed["version"] == EVENTS_SCHEMA_VERSION
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(printed)
    mapping = printed["discriminator"]["mapping"]
    types = _event_types()
    assert {"queued", "approval_requested", "run_finished", "child_event"} <= set(types)
    assert sorted(mapping) == sorted(types)


def _real_events() -> list[Any]:
    return [
        RunStarted(task="fix it", model="gpt-4.1", workspace="/ws", session_id="s1"),
        ToolFinished(
            call_id="c1",
            name="bash",
            is_error=True,
            summary="exit 1",
            duration_ms=12.5,
            details={"exit_code": 1},
            output="FAILED test_calc.py",
        ),
        ChildEvent(child_id="s2", parent_call_id="c2", event=TextDelta(text="hello")),
        AssistantReply(
            message=AssistantMessage(text="ok", tool_calls=(ToolCall(id="c4", name="read"),))
        ),
        RunFinished(
            status=RunStatus.PROVIDER_ERROR,
            turns=1,
            usage=Usage(input_tokens=3),
            answer="",
            error=RunError(kind="rate_limit", status=429, message="slow down"),
        ),
        ChildEvent(
            child_id="s3",
            parent_call_id="c3",
            event=RunFinished(status=RunStatus.VERIFIED, turns=2, usage=Usage(), answer="done"),
        ),
    ]


@pytest.mark.parametrize("event", _real_events(), ids=lambda e: e.type)
def test_real_events_validate_against_it(printed, event):
    jsonschema.Draft202012Validator(printed).validate(event.model_dump(mode="json"))


@pytest.mark.parametrize(
    "line",
    [
        {"type": "no_such_event", "text": "x"},
        {"type": "run_started", "model": "m", "workspace": "/ws"},  # no task
        {
            "type": "child_event",
            "child_id": "s",
            "parent_call_id": "c",
            "event": {"type": "text_delta"},
        },  # the child's event lacks its text
    ],
)
def test_an_invalid_line_fails_validation(printed, line):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(printed).validate(line)


def _without_prose(node: Any, *, properties: bool = False) -> Any:
    """The schema without its `description` texts (pydantic copies docstrings there):
    rewording one is no change of the contract. A field named `description` stays."""
    if isinstance(node, dict):
        return {
            key: _without_prose(value, properties=key == "properties")
            for key, value in node.items()
            if properties or key != "description"
        }
    if isinstance(node, list):
        return [_without_prose(item) for item in node]
    return node


def test_the_schema_matches_its_stored_fingerprint():
    schema = {k: v for k, v in event_schema().items() if k != "version"}
    canonical = json.dumps(_without_prose(schema), sort_keys=True, separators=(",", ":"))
    current = {
        "version": EVENTS_SCHEMA_VERSION,
        "sha256": hashlib.sha256(canonical.encode()).hexdigest(),
    }
    stored = json.loads(FINGERPRINT.read_text())
    if current == stored:
        return
    wanted = json.dumps(current)
    if stored["version"] == EVENTS_SCHEMA_VERSION:
        pytest.fail(
            "the event schema changed: bump EVENTS_SCHEMA_VERSION in src/lathe/events.py "
            f"and update tests/data/event_schema.json (the new sha256 is {current['sha256']})"
        )
    pytest.fail(f"EVENTS_SCHEMA_VERSION changed: update tests/data/event_schema.json to {wanted}")
