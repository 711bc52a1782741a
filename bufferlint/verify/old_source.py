"""Read the original version of a target file for `--against`: a file, or a git revision of the
same file (torch-free)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from bufferlint.verify.errors import UsageError


def read_old_source(against: str, target_file: Path) -> tuple[str, str]:
    """(source text, label). A path that exists is a file; anything else is a git revision."""
    candidate = Path(against)
    if candidate.is_file():
        try:
            return candidate.read_text(encoding="utf-8"), str(candidate)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--against {against}: cannot read: {exc}") from None
    return _git_show(against, target_file), f"{against}:{_repository_path(target_file)}"


def _repository_path(target_file: Path) -> str:
    """The file's path from the root of its repository, as git spells a revision's file
    (`HEAD:src/models/rotary.py`); the bare name where git cannot say."""
    command = ["git", "-C", str(target_file.parent), "rev-parse", "--show-prefix"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return target_file.name
    return f"{done.stdout.strip()}{target_file.name}" if done.returncode == 0 else target_file.name


def _git_show(revision: str, target_file: Path) -> str:
    if revision.startswith("-"):
        raise UsageError(f"--against {revision}: not a file and not a git revision")
    # `REV:./name` is resolved relative to -C's folder, so no repo-root arithmetic is needed
    command = ["git", "-C", str(target_file.parent), "show", f"{revision}:./{target_file.name}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--against {revision}: cannot run git: {exc}") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git show failed"])[-1]
        raise UsageError(f"--against {revision}: not a file and not a git revision of {target_file.name} ({reason})")
    return done.stdout
