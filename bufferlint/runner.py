"""Run check or fix over many files: cache look-ups first, then the misses, in parallel processes.

Results come back in the order of the candidates whatever `-j` is, and carry only what output
needs (no CST nodes, fixes without edits: see `cache.portable`), so `-j 1` and `-j N` give the same
results and a long run keeps no syntax trees alive.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from bufferlint.discovery import Candidate

if TYPE_CHECKING:  # the engine (libcst) is imported only when a file has to be processed
    from bufferlint.cache import Cache
    from bufferlint.config import Settings
    from bufferlint.lint import FileResult

# Below this many files to process, starting worker processes costs more than it saves.
MIN_FILES_FOR_POOL = 4


@dataclass(frozen=True)
class RunOptions:
    fix: bool = False
    jobs: int = 1
    cache: bool = False  # the API default; the CLI turns it on unless --no-cache
    cache_dir: Optional[str] = None  # None: .bufferlint_cache in the project root

    @classmethod
    def from_args(cls, args: argparse.Namespace, fix: bool) -> "RunOptions":
        # getattr: callers that build their own parser (plugins) may not add these options
        return cls(
            fix=fix,
            jobs=getattr(args, "jobs", None) or default_jobs(),
            cache=not getattr(args, "no_cache", False),
            cache_dir=getattr(args, "cache_dir", None),
        )


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options about how files are processed (parallelism, caching) live with the runner."""
    parser.add_argument("-j", "--jobs", type=_positive_int, default=None, metavar="N",
                        help="files processed in parallel (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where the result cache lives (default: .bufferlint_cache in the project root)")


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


@dataclass
class RunResult:
    files: list["FileResult"] = field(default_factory=list)


def run(candidates: Iterable[Candidate], settings: "Settings", options: RunOptions) -> RunResult:
    paths = [c.path for c in candidates]
    cache = _open_cache(settings, options)
    results: list[Optional[FileResult]] = [None] * len(paths)
    todo: list[int] = []
    for index, path in enumerate(paths):
        cached = _from_cache(cache, path, settings, options) if cache is not None else None
        if cached is None:
            todo.append(index)
        else:
            results[index] = cached
    for index, result in zip(todo, _process_all([paths[i] for i in todo], settings, options, cache)):
        results[index] = result
    return RunResult([r for r in results if r is not None])


def index_cache_dir(options: RunOptions) -> Optional[str]:
    """Where the project pre-pass keeps its file indexes: the result cache folder, unless --no-cache."""
    if not options.cache:
        return None
    from bufferlint.cache import default_cache_dir

    return options.cache_dir or default_cache_dir()


def _open_cache(settings: "Settings", options: RunOptions) -> "Optional[Cache]":
    if not options.cache:
        return None
    from bufferlint import __version__
    from bufferlint.cache import Cache, default_cache_dir, settings_fingerprint

    return Cache.open(options.cache_dir or default_cache_dir(), __version__, settings_fingerprint(settings))


def _from_cache(cache: "Cache", path: str, settings: "Settings", options: RunOptions) -> "Optional[FileResult]":
    """A hit, unless it is a fix run and the cached findings include a fix to apply."""
    from bufferlint.lint import FileResult

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None  # processing reports the error
    findings = cache.load(cache.key(path, data), path)
    if findings is None:
        return None
    if options.fix and any(f.fix_applicable(settings.unsafe_fixes) for f in findings):
        return None
    return FileResult(path, findings)


def _process_all(paths: Sequence[str], settings: "Settings", options: RunOptions, cache: "Optional[Cache]") -> list["FileResult"]:
    import bufferlint.lint  # noqa: F401  (loaded before forking, so workers inherit it)

    work = partial(process_path, settings=settings, options=options, cache=cache)
    jobs = min(options.jobs, len(paths))
    if jobs > 1 and len(paths) >= MIN_FILES_FOR_POOL:
        pooled = _process_in_pool(work, paths, jobs)
        if pooled is not None:
            return pooled
    return [work(path) for path in paths]


def _process_in_pool(work: "partial[FileResult]", paths: Sequence[str], jobs: int) -> "Optional[list[FileResult]]":
    from concurrent.futures import ProcessPoolExecutor

    # Small chunks keep the workers balanced (file sizes vary a lot) without a round trip per file.
    chunksize = max(1, min(16, len(paths) // (jobs * 8)))
    try:
        executor = ProcessPoolExecutor(max_workers=jobs)
    except (OSError, NotImplementedError, ImportError):
        return None  # no process support here (some sandboxes): run in this process
    with executor:
        return list(executor.map(work, paths, chunksize=chunksize))


def process_path(path: str, settings: "Settings", options: RunOptions, cache: "Optional[Cache]" = None) -> "FileResult":
    """Read, check or fix, and cache one file; runs in a worker process when -j > 1."""
    from bufferlint.cache import portable
    from bufferlint.lint import FileResult, check_bytes, error_finding, fix_bytes
    from bufferlint.source import SourceError, digest, read_bytes
    from bufferlint.notebook import is_notebook, process_notebook

    try:
        data = read_bytes(path)
    except SourceError as error:
        return FileResult(path, [error_finding(path, error)])
    notebook = is_notebook(path)
    if notebook:
        result = process_notebook(data, path, settings, fix=options.fix)
    else:
        result = fix_bytes(data, path, settings) if options.fix else check_bytes(data, path, settings)
        result.findings = [portable(f) for f in result.findings]
    if result.new_data is not None:  # written only if the file still holds this when the run ends
        result.read_digest = digest(data)
    if notebook:  # findings carry their cell, which cached findings do not keep: not cached
        return result
    # A fix run that changed nothing and failed nothing found exactly what a check finds.
    if cache is not None and result.new_data is None and result.fix_error is None:
        cache.store(cache.key(path, data), result.findings)
    return result


def process_file(candidate: Candidate, settings: "Settings", options: RunOptions) -> "FileResult":
    """One file without the cache (kept for API callers)."""
    return process_path(candidate.path, settings, options)
