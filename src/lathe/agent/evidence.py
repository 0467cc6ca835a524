"""What the model's own commands tell of the tests, when no verify gate runs them
(`EvidenceEnd`), and reading a test runner's output (`check_counts`,
`reports_failure`): which commands run a check, which only look, which may change
files, and the runner's outcome as the evidence a run ends with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lathe.agent.finish import CallRecord, Decision, Finish, FinishHandler, RunState
from lathe.events import Evidence, RunStatus
from lathe.types import AssistantMessage, Message

_TEST_LIKE = re.compile(
    r"(^|[\s;&|(/])("
    r"pytest|py\.test|tox|nox|unittest|nosetests|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|jest|vitest|mocha|"
    r"go\s+test|cargo\s+(test|nextest)|make\s+(test|check)|ctest|"
    r"mvn\s+(test|verify)|gradle\w*\s+test|rspec|phpunit|dotnet\s+test|"
    r"mix\s+test|swift\s+test|ruff|mypy|flake8|eslint|tsc"
    r")\b"
)


# Commands that only look: after one of these the test evidence still stands.
_ONLY_LOOKS = frozenset(
    {"ls", "cat", "head", "tail", "wc", "grep", "rg", "pwd", "echo", "tree", "stat", "file",
     "diff", "cd", "true", "which", "type", "less", "more", "du", "df", "printenv"}
)  # fmt: skip
_GIT_LOOKS = frozenset({"status", "diff", "log", "show", "blame", "branch", "rev-parse"})


def shell_parts(command: str) -> list[tuple[str, str]]:
    """The parts of a shell command between its control operators, each with the one
    after it ("" after the last): `&&`, `||`, `;`, `|`, `|&`, `&` or a newline. Quotes,
    backslashes and `$(...)` are kept whole (`pytest -k "a;b"` is one part, not `b"`), a
    redirect's `&` is no operator (`2>&1`), and the parentheses and braces of a subshell
    or a group are left out (`(cd x && pytest)`: `cd x`, `pytest`)."""
    parts: list[tuple[str, str]] = []
    current, quote, depth, i = "", "", 0, 0
    while i < len(command):
        char, two = command[i], command[i : i + 2]
        step = 2 if char == "\\" else 1
        if quote:
            quote = "" if char == quote else quote
            step = 2 if char == "\\" and quote == '"' else 1
        elif char in "'\"`":
            quote = char
        elif two == "$(":
            depth, step = depth + 1, 2
        elif char == ")" and depth:
            depth -= 1
        elif depth == 0 and (operator := _operator(command, i, current)):
            parts.append((current, operator))
            current, i = "", i + len(operator)
            continue
        current, i = current + command[i : i + step], i + step
    parts.append((current, ""))
    return [(_bare(text), operator) for text, operator in parts]


def _operator(command: str, i: int, before: str) -> str:
    """The control operator at `command[i]`, "" when none starts there."""
    two = command[i : i + 2]
    if two in ("&&", "||", "|&"):
        return two
    if command[i] == "&" and (before.endswith(">") or command[i + 1 : i + 2] == ">"):
        return ""  # `2>&1`, `&>file`
    return command[i] if command[i] in ";|&\n" else ""


def _bare(part: str) -> str:
    """A part without the opening or closing of a subshell or a group around it."""
    part = part.strip()
    while part[:1] in ("(", "{") and part:
        part = part[1:].lstrip()
    while part.endswith(")") and part.count(")") > part.count("("):
        part = part[:-1].rstrip()
    if part == "}" or (part.endswith("}") and part[:-1].endswith((" ", ";")) and "{" not in part):
        part = part[:-1].rstrip()
    return part


def is_test_like(command: str) -> bool:
    """Whether a part of the command runs a test runner or checker (`runs_a_check`): a
    part that installs one, names its file (`sed -i ... pytest.ini`) or runs it to fix
    what it checks does not."""
    return any(runs_a_check(part) for part, _ in shell_parts(command))


# A checker told to change what it checks (`ruff --fix`, `ruff format`, `jest -u`).
_CHECK_FIXES = re.compile(
    r"\s(--fix\S*|--write|-w|--update\S*|--snapshot-update|-u|format)(\s|=|$)"
)
# What may stand before the runner a command part starts: variables, `env`, `timeout
# N`, an interpreter or a wrapper (`CI=1 python3.12 -m pytest`, `coverage run -m`), and
# the folder it is run from (`.venv/bin/pytest`, `./node_modules/.bin/jest`).
_RUNNER_PREFIX = re.compile(
    r"^((env|timeout\s+\S+|\w+=\S*)\s+)*"
    r"((python[\d.]*|py)\s+-m\s+|coverage\s+run\s+-m\s+|npx\s+"
    r"|(uv|poetry|pdm|pipenv|hatch)\s+run\s+)?"
    r"(\S*/)?"
)


def runs_a_check(part: str) -> bool:
    """Whether one part of a shell command starts with a test runner or checker that is
    not told to fix what it checks: `pytest -q`, `CI=1 python -m pytest`, `npx jest`;
    not `sed -i ... pytest.ini`, which only names one."""
    command = _RUNNER_PREFIX.sub("", part.strip(), count=1)
    started = _TEST_LIKE.match(command)
    return started is not None and started.start(2) == 0 and not _CHECK_FIXES.search(part)


def only_looks(command: str) -> bool:
    """Whether every part of a shell command only reads (`git diff; cat x`) or runs a
    test runner or checker not told to fix what it checks (`pytest -q || true`): after
    any other, files may have changed (`sed -i` after a passing pytest broke the code)."""
    if ">" in command or "$(" in command or "`" in command:
        return False
    return all(looks_only(part.split()) for part, _ in shell_parts(command))


def looks_only(words: Sequence[str]) -> bool:
    """Whether a simple command, by its words, only reads (`cat x`, `git diff`) or runs a
    test runner or checker not told to fix what it checks; its redirects aside."""
    if not words:
        return True
    if words[0] == "git" and len(words) > 1 and words[1] in _GIT_LOOKS:
        return True
    return words[0] in _ONLY_LOOKS or runs_a_check(" ".join(words))


# A runner asked for something other than a run: its version, its help, what it would
# collect. Such a part only looks, but tells nothing of the tests. (Not `-V`: ctest's
# verbose run.)
_NOT_A_RUN = re.compile(
    r"\s(--version|--help|-h|--collect-only|--co|--fixtures|--markers|--list\w*)(\s|=|$)"
)
_PIPEFAIL = re.compile(r"^set\s+(-\w+\s+)*-\w*o\s*pipefail\b")
_LOST_BY = {
    "|": "a pipe after it", "|&": "a pipe after it", "||": "`||` after it",
    ";": "a command after it", "\n": "a command after it", "&": "it ran in the background",
}  # fmt: skip


def evidence_of(
    command: str, exit_code: int | None, output: str
) -> tuple[Evidence | None, str] | None:
    """What a command the model ran tells of the tests: None when no part of it runs a
    test runner or checker (`--version`, `--help` or `--collect-only` runs none); `(None,
    "")` when a part after the last one that does may change files (`pytest && sed -i
    ...`); else the evidence and, when its exit status need not be the runners' (a pipe
    after one without `set -o pipefail`, `||`, `;`, `&`), why: then the exit code is
    read from the runner's counts in `output` (1 when they report a failure, else 0),
    or None when it shows none. `pytest | tail -3` had been reported as "exited 0" after
    "1 failed"."""
    parts = [(part, operator) for part, operator in shell_parts(command) if part]
    runs = [n for n, (part, _) in enumerate(parts) if runs_a_check(part)]
    runs = [n for n in runs if not _NOT_A_RUN.search(parts[n][0])]
    if not runs:
        return None
    if not all(only_looks(part) for part, _ in parts[runs[-1] + 1 :]):
        return None, ""
    pipefail = any(_PIPEFAIL.match(part) for part, _ in parts[: runs[0]])
    lost = None
    for n in range(runs[0], len(parts)):
        operator = parts[n][1]
        last = n == len(parts) - 1
        if operator == "&&" or (operator in ("|", "|&") and pipefail) or (last and operator != "&"):
            continue
        lost = _LOST_BY.get(operator, "a command after it")
        break
    evidence = Evidence(command=command, exit_code=exit_code)
    counts = check_counts(output) if lost is not None or exit_code == 0 else None
    if lost is None:
        if exit_code == 0 and _reports_failure(output, counts):  # as the gate's `passed`
            return evidence.model_copy(update={"exit_code": 1}), (
                f"`{command}` exited 0, but its output reports "
                f"{counts_text(counts)}, so the evidence gives exit 1"
            )
        return evidence, ""
    if counts is None:
        return evidence.model_copy(update={"exit_code": None}), (
            f"the exit status of `{command}` is not its test runner's ({lost}) and its "
            "output shows no test counts: whether the tests passed is unclear"
        )
    judged = 1 if _reports_failure(output, counts) else 0
    return evidence.model_copy(update={"exit_code": judged}), (
        f"the exit status of `{command}` is not its test runner's ({lost}); its output "
        f"reports {counts_text(counts)}, so the evidence gives exit {judged}"
    )


def may_change_files(record: CallRecord) -> bool:
    """Whether a call may have changed the workspace: a tool that writes and succeeded,
    or a command that did more than look or run a check, whatever its exit code."""
    if record.tool is None or record.tool.read_only:
        return False
    command = record.tool.shell_command(record.arguments or {})
    if command is None:
        return not record.output.is_error
    if record.output.is_error and not _has_exit(record):
        return False
    return not only_looks(command)


class EvidenceEnd(FinishHandler):
    """Without a verify gate, a reply without calls ends the run `unverified`, with the
    evidence: the last command the model ran that runs tests after its last file
    change, and the runner's exit code (`evidence_of`; the reason says when it was
    read from the output or cannot be told). Any later change clears it, one later in
    the same command too."""

    def __init__(self) -> None:
        self.latest: Evidence | None = None
        self._doubt = ""  # why `latest`'s exit code is not the command's own, if it is not

    async def begin(self, run: RunState) -> Sequence[Message]:
        self.latest, self._doubt = None, ""
        return ()

    async def after_calls(
        self, calls: Sequence[CallRecord], run: RunState, *, by_lathe: bool
    ) -> Decision | None:
        for record in calls:
            command = record.tool.shell_command(record.arguments or {}) if record.tool else None
            ran = command is not None and (_has_exit(record) or not record.output.is_error)
            judged = None
            if ran and command is not None:
                exit_code = record.output.details.get("exit_code")
                judged = evidence_of(command, exit_code, record.output.content)
            if judged is not None:
                self.latest, self._doubt = judged
            elif may_change_files(record):
                self.latest, self._doubt = None, ""
        return None

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        if reply.tool_calls:
            return None
        return Finish(
            RunStatus.UNVERIFIED,
            answer=run.answer(reply),
            evidence=self.latest,
            reason=self._doubt,
        )


def _has_exit(record: CallRecord) -> bool:
    return "exit_code" in record.output.details


# Not unittest's "OK (expected failures=1)": an expected failure is a pass.
_COUNTS = re.compile(r"(\d+) (passed|failed|errors?)\b|\b(?<!expected )(failures|errors)=(\d+)")
_RAN = re.compile(r"^Ran (\d+) tests?\b", re.MULTILINE)


def check_counts(output: str) -> dict[str, int] | None:
    """How many tests a check's output says passed and failed (errors count as
    failures), from the last line that gives such counts: the closing summary of pytest,
    unittest ("Ran N tests"), jest, cargo and the like. None when no line does."""
    counts: dict[str, int] = {}
    for line in reversed(output.splitlines()):
        for number, word, _key, value in _COUNTS.findall(line):
            kind = "passed" if word == "passed" else "failed"
            counts[kind] = counts.get(kind, 0) + int(number or value)
        if counts:
            break
    ran = [int(n) for n in _RAN.findall(output)]
    if not counts and not ran:
        return None
    counts.setdefault("failed", 0)
    counts.setdefault("passed", max(0, (ran[-1] if ran else 0) - counts["failed"]))
    return counts


def counts_text(counts: dict[str, int] | None) -> str:
    """ "N failing, M passing", from `check_counts`."""
    counts = counts or {}
    return f"{counts.get('failed', '?')} failing, {counts.get('passed', '?')} passing"


def reports_failure(output: str) -> bool:
    """Whether a test runner's counts in `output`, or any closing summary in it, report
    a failing test."""
    return _reports_failure(output, check_counts(output))


def _reports_failure(output: str, counts: dict[str, int] | None) -> bool:
    """`reports_failure`, the counts `check_counts` read from `output` given."""
    return bool(counts and counts["failed"]) or _failing_summary(output)


# A line naming a failing test, in the shape each runner gives its names (a log line,
# "ERROR: cache miss at 12:00", names none): pytest's short summary ("FAILED
# tests/t.py::test_a - msg", "ERROR tests/t.py": an id with `::` or a .py file) and its
# -v lines, unittest's "FAIL: test_a (mod.Case.test_a)" (a subtest's parameters after
# it), go's "--- FAIL: TestA" (indented for a subtest), cargo's "test a ... FAILED". Not
# unittest's "FAILED (failures=1)". No part before a name may match a line break: at a
# line's start, `\s*` read on across every blank line after it (quadratic in them).
_FAILING_TEST = re.compile(
    r"^(?:FAILED|ERROR) (?P<pytest>[^\s:]+\.py(?:::[^\n]*?)?|[^\s:]+::[^\n]*?)"
    r"(?: - [^\n]*)?[ \t]*$"
    r"|^(?P<verbose>\S+::\S+) (?:FAILED|ERROR)\b"
    r"|^(?:FAIL|ERROR): (?P<unittest>\w+ \([\w.]+\)(?: \([^\n]*\))?)[ \t]*$"
    r"|^[ \t]*--- FAIL: (?P<go>(?:Test|Example|Fuzz|Benchmark)\S*)"
    r"|^test (?P<cargo>\S+) \.\.\. FAILED[ \t]*$",
    re.MULTILINE,
)
_COLLECTION_STOPPED = re.compile(r"Interrupted: \d+ errors? during collection")


def failing_tests(output: str) -> frozenset[str]:
    """The tests (or, for a collection error, the files) a runner's output names as
    failing or erroring; empty when it names none, as most runners do without their
    summary of failures."""
    return frozenset(
        next(name for name in match.groups() if name) for match in _FAILING_TEST.finditer(output)
    )


def collection_stopped(output: str) -> str:
    """pytest's "Interrupted: N errors during collection" (no test ran), "" when the
    output does not say so."""
    stopped = _COLLECTION_STOPPED.search(output)
    return stopped.group() if stopped else ""


# A test runner's closing line: pytest's "1 failed, 2 passed in 0.12s", jest's
# "Tests: 1 failed", cargo's "test result: FAILED", unittest's "FAILED (failures=1)".
_SUMMARY = re.compile(
    r"^=+ .*\bin \d+(\.\d+)?m?s\b.*=+$|^\d+ (passed|failed|errors?)\b.*\bin \d+(\.\d+)?m?s\b"
    r"|^\W*Tests?:|^test result:|^FAILED \("
)


def _failing_summary(output: str) -> bool:
    """Whether any closing summary in `output` reports a failure, not only the last: the
    code under test printed "1 passed" at exit after pytest's "1 failed"."""
    for line in output.splitlines():
        if _SUMMARY.search(line):
            counts = check_counts(line)
            if counts is not None and counts["failed"] > 0:
                return True
    return False
