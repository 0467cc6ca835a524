"""A real `lathe serve` subprocess for the service tests: started on a free port with
its own LATHE_HOME, stopped (or killed with -9) by the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from lathe.client import LatheClient


class ServeProcess:
    def __init__(self, home: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.args = args
        self.extra_env = env or {}
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> ServeProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
        env.update({"LATHE_HOME": str(self.home), "OPENAI_API_KEY": "sk-test",
                    **self.extra_env})  # fmt: skip
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lathe", "serve", "--port", "0", *self.args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.home.parent,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("http://"):
            self.process.kill()
            raise AssertionError(f"lathe serve did not start: {self.process.stderr.read()}")
        self.url = line
        return self

    @property
    def token(self) -> str:
        return (self.home / "serve" / "token").read_text().strip()

    def client(self) -> LatheClient:
        return LatheClient(self.url, self.token)

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> str:
        """SIGTERM, as a service manager stops it; what it wrote on stderr."""
        if self.process is None or self.process.poll() is not None:
            return ""
        self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
