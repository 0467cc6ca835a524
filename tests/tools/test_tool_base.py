"""The Tool base: what a tool declares about itself, and `@tool` for one-function tools."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import pytest
from pydantic import Field

from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry, tool, tool_spec
from lathe.tools.bash import BashTool
from lathe.tools.ls import LsParams, ls


class _Bare(Tool):
    """Declares only what every tool must."""

    name: ClassVar[str] = "bare"
    description: ClassVar[str] = "does nothing"
    parameters: ClassVar[type[Params]] = Params

    async def execute(self, args: Any, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="")


def test_a_tool_that_declares_nothing_more_gets_the_documented_defaults(ctx) -> None:
    bare = _Bare()
    assert (bare.read_only, bare.repeatable, bare.path_argument) == (False, False, None)
    assert bare.refusal_hint(Params(), ctx) is None
    assert bare.shell_command({"command": "rm -rf /"}) is None


def test_bash_names_the_command_it_runs() -> None:
    assert BashTool().shell_command({"command": "pytest -q"}) == "pytest -q"


def test_a_tool_without_execute_cannot_be_made() -> None:
    class Unfinished(Tool):
        name: ClassVar[str] = "unfinished"

    with pytest.raises(TypeError):
        Unfinished()  # type: ignore[abstract]


async def test_a_decorated_function_with_a_model_is_a_whole_tool(ctx, workspace) -> None:
    (workspace / "src").mkdir()
    (workspace / "a.txt").write_text("a")

    assert isinstance(ls, Tool)
    assert (ls.name, ls.parameters, ls.read_only, ls.path_argument) == (
        "ls",
        LsParams,
        True,
        "path",
    )
    assert ls.description == (
        "List the files and directories in a directory. Directories end with '/'."
    )
    output = await ls.execute(LsParams(), ctx)
    assert output.content == "src/\na.txt"
    assert ls.summarize_call(LsParams()) == "."
    assert ToolRegistry([ls]).get("ls") is ls


async def test_a_decorated_function_takes_its_parameters_from_the_signature(ctx) -> None:
    @tool(repeatable=True)
    async def greet(
        who: Annotated[str, Field(description="Whom to greet.")],
        context: ToolContext,
        times: int = 1,
    ) -> str:
        """Greet someone, more than once if asked."""
        return f"hello {who} " * times + f"from {context.workspace.name}"

    spec = tool_spec(greet)
    assert (spec.name, spec.description) == ("greet", "Greet someone, more than once if asked.")
    assert spec.parameters["required"] == ["who"]
    assert spec.parameters["properties"]["who"] == {
        "description": "Whom to greet.",
        "type": "string",
    }
    assert spec.parameters["additionalProperties"] is False  # unknown arguments: an error
    assert (greet.read_only, greet.repeatable) == (False, True)
    args = greet.parameters.model_validate({"who": "you", "times": 2})
    output = await greet.execute(args, ctx)
    assert output == ToolOutput(content="hello you hello you from ws")
    assert greet.summarize_call(args) == "you"


def test_a_tool_function_must_be_async_and_described() -> None:
    with pytest.raises(TypeError, match="async"):

        @tool
        def sync(path: str) -> str:
            """Not async."""
            return path

    with pytest.raises(TypeError, match="docstring"):

        @tool
        async def undocumented(path: str) -> str:
            return path


def test_edit_and_write_predict_the_diff_a_person_approves(tmp_path):
    from lathe.tools.edit import EditTool
    from lathe.tools.write import WriteTool

    (tmp_path / "app.py").write_text("a = 1\nb = 2\n")

    edit = EditTool().preview_change(
        {"path": "app.py", "old_string": "b = 2", "new_string": "b = 3"}, tmp_path
    )
    new_file = WriteTool().preview_change({"path": "new.py", "content": "x = 1\n"}, tmp_path)

    assert "-b = 2\n+b = 3\n" in edit
    assert "+x = 1\n" in new_file
    assert EditTool().preview_change({"path": "app.py", "old_string": "zz"}, tmp_path) is None
    assert EditTool().preview_change({"path": "../out.py", "old_string": "a"}, tmp_path) is None
