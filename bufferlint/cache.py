"""A content-hash cache of check results, so an unchanged file costs a read and a hash.

Layout: `<project root>/.bufferlint_cache/` (CACHEDIR.TAG, a `.gitignore` holding `*`) with one
small JSON file per entry under `v1/<2 hex>/<key>`, plus `project-index-v1.json` (the project
pre-pass's per-file class indexes by content hash, see `analysis/project.py`). The key hashes the
file's bytes, its path (the findings name it, and per-file settings may depend on it), the
bufferlint version, a fingerprint of
bufferlint's own sources (a development checkout changes without a version bump) and the effective
settings. Entries are written to a temporary file and renamed into place, so concurrent runs only
ever see complete entries, and two runs writing the same key write the same bytes.

Only check results are stored, and only what output needs: codes, names, messages, positions and
fix applicability. Fix edits point at libcst nodes and are never cached, which is why a `--fix` run
re-processes every file whose cached result has a fixable finding (see `runner.py`).

"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from bufferlint.model import Applicability, Finding, Fix, Position

CACHE_DIR_NAME = ".bufferlint_cache"
FORMAT_VERSION = "v1"
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by bufferlint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


def project_root(start: Optional[str] = None) -> str:
    """The folder of the nearest pyproject.toml at or above `start` (the cwd), else `start`."""
    here = os.path.abspath(start or os.getcwd())
    probe = here
    while True:
        if os.path.isfile(os.path.join(probe, "pyproject.toml")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return here
        probe = parent


def default_cache_dir() -> str:
    return os.path.join(project_root(), CACHE_DIR_NAME)


@lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """Changes whenever a source file of bufferlint changes (size or mtime): a stat per module."""
    package = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.blake2b(digest_size=16)
    for directory, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                stat = os.stat(path)
                digest.update(f"{os.path.relpath(path, package)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Cache:
    """Entries for one run: `salt` already holds version, code fingerprint and settings."""

    directory: str
    salt: bytes

    @classmethod
    def open(cls, directory: str, version: str, settings_fingerprint: str) -> "Cache":
        salt = f"{FORMAT_VERSION}\0{version}\0{code_fingerprint()}\0{settings_fingerprint}\0".encode()
        return cls(os.path.abspath(directory), salt)

    def key(self, path: str, data: bytes) -> str:
        digest = hashlib.blake2b(self.salt, digest_size=20)
        digest.update(path.encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _entry_path(self, key: str) -> str:
        return os.path.join(self.directory, FORMAT_VERSION, key[:2], key)

    def load(self, key: str, filename: str) -> Optional[list[Finding]]:
        """The cached findings, or None on a miss or an unreadable entry (treated as a miss)."""
        try:
            with open(self._entry_path(key), "rb") as handle:
                payload = json.loads(handle.read())
            return [finding_from_dict(item, filename) for item in payload["findings"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, key: str, findings: list[Finding]) -> None:
        """Write one entry atomically; a cache that cannot be written is silently not used."""
        payload = json.dumps({"findings": [finding_to_dict(f) for f in findings]}, separators=(",", ":"))
        target = self._entry_path(key)
        try:
            self._prepare(os.path.dirname(target))
            _write_atomic_text(target, payload)
        except OSError:
            return  # a cache that cannot be written only costs speed

    def _prepare(self, entry_dir: str) -> None:
        ensure_cache_dir(self.directory, entry_dir)


def ensure_cache_dir(directory: str, entry_dir: str) -> None:
    """The cache folder (tagged, git-ignored) and `entry_dir` inside it exist."""
    if not os.path.isdir(directory):
        os.makedirs(directory, exist_ok=True)
    for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by bufferlint.\n*\n")):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            _write_atomic_text(path, content)
    os.makedirs(entry_dir, exist_ok=True)


def _write_atomic_text(path: str, content: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(temp, path)
    except OSError:
        _unlink_quietly(temp)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def settings_fingerprint(settings: Any) -> str:
    """Settings is a frozen dataclass of tuples and scalars: its repr names every field.
    `unsafe_fixes` is left out: findings (with their fix applicability) do not depend on it."""
    from dataclasses import replace

    return repr(replace(settings, unsafe_fixes=False))


def portable(finding: Finding) -> Finding:
    """The finding as output needs it: no CST node, a fix without edits (picklable, cacheable)."""
    fix = finding.fix
    if fix is not None and fix.edits:
        fix = Fix(fix.applicability, fix.message, ())
    return Finding(
        finding.code, finding.name, finding.message, finding.filename, None,
        finding.location, finding.end_location, fix, finding.url, finding.noqa_rows,
    )


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    fix = finding.fix
    return {
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "location": [finding.location.row, finding.location.column],
        "end_location": [finding.end_location.row, finding.end_location.column],
        "fix": None if fix is None else [fix.applicability.value, fix.message],
        "url": finding.url,
        "noqa_rows": list(finding.noqa_rows),
    }


def finding_from_dict(item: dict[str, Any], filename: str) -> Finding:
    fix = None if item["fix"] is None else Fix(Applicability(item["fix"][0]), item["fix"][1], ())
    return Finding(
        code=item["code"],
        name=item["name"],
        message=item["message"],
        filename=filename,
        node=None,
        location=Position(*item["location"]),
        end_location=Position(*item["end_location"]),
        fix=fix,
        url=item["url"],
        noqa_rows=tuple(item["noqa_rows"]),
    )
