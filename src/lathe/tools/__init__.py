"""Tools the model can call: the Tool seam, the registry, the built-ins."""
