"""Errors shared by the parent process and the worker, and whether torch is there at all (torch-free)."""
from __future__ import annotations


class UsageError(Exception):
    """Bad target, bad flag value, missing file/class, or user code that cannot be imported.

    The CLI turns this into exit code 2 with the message on one line.
    """


def torch_missing() -> str | None:
    """Why the verifier cannot run here, or None: it runs the user's modules with torch, in a
    subprocess of this interpreter, and without torch every check would only fail."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        return None
    return "torch is not installed in this environment: the verifier builds and runs your modules with it (install the torch your project uses in this environment)"
