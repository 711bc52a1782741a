"""Path display shared by reports (torch-free)."""
from __future__ import annotations

import os


def display_path(filename: str) -> str:
    """Relative to the cwd when below it (as linters print paths), else unchanged."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if rel.startswith("..") else rel
