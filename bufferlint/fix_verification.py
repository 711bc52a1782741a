"""`bufferlint --fix --verify`: prove each rewritten class against the pre-fix version, or revert.

torch is only imported by the verifier's worker subprocess, never here.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field

from bufferlint.source import write_atomic

DEFAULT_TIMEOUT = 120.0


@dataclass
class FileVerification:
    path: str
    verified: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)  # "Class: reason"
    failed: list[str] = field(default_factory=list)  # "Class: reason"

    @property
    def reverted(self) -> bool:
        return bool(self.failed)


def changed_classes(old: bytes, new: bytes) -> tuple[list[str], list[str]]:
    """Top-level classes whose code the fix changed, and changed classes nested deeper
    (which the verifier cannot import by name)."""
    old_classes, old_nested = _class_dumps(old)
    new_classes, new_nested = _class_dumps(new)
    top = [name for name, dump in new_classes.items() if old_classes.get(name) != dump]
    nested = [name for name, dump in new_nested.items() if old_nested.get(name) != dump]
    return top, nested


def _class_dumps(data: bytes) -> tuple[dict[str, str], dict[str, str]]:
    tree = ast.parse(data)
    top = {node.name: ast.dump(node) for node in tree.body if isinstance(node, ast.ClassDef)}
    nested: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name not in top:
            nested[node.name] = ast.dump(node)
    return top, nested


def verify_fixed_file(path: str, old: bytes, new: bytes, timeout: float = DEFAULT_TIMEOUT) -> FileVerification:
    """`new` is already written at `path`; verify it and write `old` back when a class fails."""
    from bufferlint.verify.api import verify_against
    from bufferlint.verify.progress import Progress

    outcome = FileVerification(path)
    top, nested = changed_classes(old, new)
    outcome.unverified.extend(f"{name}: nested class, cannot be built by name" for name in nested)
    old_text = old.decode(_encoding(old), errors="surrogateescape")
    with Progress(len(top)) as progress:  # shown on a terminal only
        results = verify_against(path, old_text, top, None, timeout, on_class_start=progress.advance)
    for result in results:
        reason = "; ".join(result.reasons) or result.status
        if result.status == "pass":
            outcome.verified.append(result.class_name)
        elif result.status == "fail":
            outcome.failed.append(f"{result.class_name}: {reason}")
        else:
            outcome.unverified.append(f"{result.class_name}: {reason}")
    if outcome.reverted:
        write_atomic(path, old)
    return outcome


def _encoding(data: bytes) -> str:
    import io
    import tokenize

    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return "utf-8"


def report(outcome: FileVerification) -> None:
    """One line per class on stderr, so stdout keeps the findings format intact."""
    for name in outcome.verified:
        print(f"verified: {outcome.path}::{name} (built, state_dict keys equal, old checkpoint loads, outputs equal)", file=sys.stderr)
    for line in outcome.unverified:
        print(f"unverified: {outcome.path}::{line}", file=sys.stderr)
    if outcome.unverified and not outcome.reverted:
        print(f"kept unverified: {outcome.path} (its fix is written; exit 1 until every class is verified)", file=sys.stderr)
    for line in outcome.failed:
        print(f"verification failed: {outcome.path}::{line}", file=sys.stderr)
    if outcome.reverted:
        print(f"reverted: {outcome.path} (its fix was not applied)", file=sys.stderr)
