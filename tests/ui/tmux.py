"""Drive a real program in a real terminal: a private tmux server, send-keys in,
capture-pane out."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        width: int = 100,
        height: int = 32,
    ) -> None:
        self.socket = f"lathe-test-{uuid.uuid4().hex[:8]}"
        self.target = "t"
        assignments = [f"{key}={value}" for key, value in env.items()]
        command = " ".join(shlex.quote(part) for part in ["env", *assignments, *argv])
        self._tmux(
            "new-session",
            "-d",
            "-s",
            self.target,
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            cwd,
            command,
        )
        self._tmux("set-option", "-t", self.target, "remain-on-exit", "on")
        self._tmux("set-option", "-t", self.target, "history-limit", "5000")

    def _tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=10,
            env={**os.environ, "TMUX": ""},
        )
        if result.returncode != 0 and args[0] not in {"kill-server"}:
            raise RuntimeError(f"tmux {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def keys(self, *names: str) -> None:
        self._tmux("send-keys", "-t", self.target, *names)

    def send(self, text: str) -> None:
        """Type a line and press Enter."""
        self.type(text)
        time.sleep(0.1)
        self.keys("Enter")

    def screen(self, history: bool = True) -> str:
        args = ["capture-pane", "-p", "-J", "-t", self.target]
        if history:
            args += ["-S", "-3000"]
        return self._tmux(*args)

    def wait_for(self, pattern: str, timeout: float = 15.0, *, after: int = 0) -> str:
        """Wait until `pattern` (a regex) appears on the screen (scrollback included),
        searching from character `after`; the screen text at that moment."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if re.search(pattern, text[after:], re.MULTILINE):
                return text
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} did not appear in {timeout}s; screen:\n{text}")

    def dead(self) -> bool:
        out = self._tmux("display-message", "-p", "-t", self.target, "#{pane_dead}")
        return out.strip() == "1"

    def wait_exit(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.dead():
                return
            time.sleep(0.1)
        raise AssertionError(f"the program did not exit; screen:\n{self.screen()}")

    def close(self) -> None:
        self._tmux("kill-server")
