"""`lathe schema events`: the JSON Schema of the event stream (`lathe run --json` lines
and the service's events), with a `version` that changes whenever the schema does."""

from __future__ import annotations

import json
from typing import Any

import click

from lathe.events import EVENTS_SCHEMA_VERSION, event_adapter
from lathe.ui.options import LatheGroup


def event_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the events as lathe writes them, with its
    version: every field is required, since every line carries every field."""
    schema = event_adapter().json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "lathe events",
        "version": EVENTS_SCHEMA_VERSION,
        **schema,
    }


@click.group("schema", cls=LatheGroup)
def schema_group() -> None:
    """Print the JSON Schema of lathe's event stream."""


@schema_group.command("events")
def events() -> None:
    """The JSON Schema of every event: each line of `lathe run --json` and each event of
    the service's stream."""
    click.echo(json.dumps(event_schema(), indent=2, sort_keys=True))
