"""`lathe serve --token-file`: a file it cannot make, or a token HTTP cannot carry, stops
the server at once with one line (exit 2), before anything is served."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _serve(tmp_path, token_file):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LATHE_")}
    return subprocess.run(
        [sys.executable, "-m", "lathe", "serve", "--port", "0", "--token-file", str(token_file)],
        env={**env, "LATHE_HOME": str(tmp_path / "home")},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("where", ["proc", "a dangling link"])
def test_a_token_file_that_cannot_be_made_is_one_line(tmp_path, where):
    # A FileNotFoundError (or FileExistsError) traceback, exit 1.
    if where == "proc":
        path = "/proc/nope/tok"
    else:
        (tmp_path / "link").symlink_to(tmp_path / "nowhere" / "folder")
        path = tmp_path / "link" / "tok"
    result = _serve(tmp_path, path)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"lathe: cannot create the token file {path}: "), line


def test_a_token_http_headers_cannot_carry_is_refused_at_the_start(tmp_path):
    # It was accepted, and no request ever matched it: the header is read as latin-1
    # bytes and browsers and httpx cannot send such a header at all.
    token = tmp_path / "token"
    token.write_text("pässwörd-töken\n")
    result = _serve(tmp_path, token)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"lathe: the token in {token} ") and "ASCII" in line, line


def test_a_token_file_whose_write_failed_is_not_left_empty(tmp_path, monkeypatch):
    # A full disk left an empty file, and every start after said "the token file is
    # empty" instead of making one.
    import errno

    from lathe.errors import UsageError
    from lathe.service import server

    path = tmp_path / "token"

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", full)
        with pytest.raises(UsageError, match="No space left on device"):
            server.read_or_create_token(path)
    assert not path.exists()
    token, new = server.read_or_create_token(path)
    assert new and path.read_text() == token + "\n"
