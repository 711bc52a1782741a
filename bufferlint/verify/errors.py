"""Exceptions shared by the parent process and the worker (torch-free)."""
from __future__ import annotations


class UsageError(Exception):
    """Bad target, bad flag value, missing file/class, or user code that cannot be imported.

    The CLI turns this into exit code 2 with the message on one line.
    """
