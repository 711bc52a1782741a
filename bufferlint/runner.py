"""Run check or fix over many files and collect the results."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Iterable

from bufferlint.config import Settings
from bufferlint.discovery import Candidate
from bufferlint.lint import FileResult, check_bytes, error_finding, fix_bytes
from bufferlint.source import SourceError, read_bytes


@dataclass(frozen=True)
class RunOptions:
    fix: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace, fix: bool) -> "RunOptions":
        return cls(fix=fix)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options about how files are processed (parallelism, caching) live with the runner."""


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)


def process_file(candidate: Candidate, settings: Settings, options: RunOptions) -> FileResult:
    try:
        data = read_bytes(candidate.path)
    except SourceError as error:
        return FileResult(candidate.path, [error_finding(candidate.path, error)])
    if options.fix:
        return fix_bytes(data, candidate.path, settings)
    return check_bytes(data, candidate.path, settings)


def run(candidates: Iterable[Candidate], settings: Settings, options: RunOptions) -> RunResult:
    return RunResult([process_file(c, settings, options) for c in candidates])
