"""The embedded local model: install it (`install`), serve it (`server`).

`lathe local install` assembles a verified GGUF under `LATHE_HOME/models` and builds
llama-server; `ensure_local_server("local/1.5b")` hands the CLI an OpenAI-compatible
base URL for it. Importing this package does no I/O and imports nothing heavy.
"""

from lathe.local.install import (
    InstallError,
    install_all,
    install_model,
    install_server,
    is_installed,
)
from lathe.local.models import DEFAULT_MODEL, MODELS, LocalModel, get_model
from lathe.local.server import (
    LocalEndpoint,
    LocalServer,
    ServerOptions,
    ensure_local_server,
    managed_server,
)

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "InstallError",
    "LocalEndpoint",
    "LocalModel",
    "LocalServer",
    "ServerOptions",
    "ensure_local_server",
    "get_model",
    "install_all",
    "install_model",
    "install_server",
    "is_installed",
    "managed_server",
]
