"""Run verification jobs in a worker subprocess with a per-job timeout (torch-free).

User code is imported and executed, so it runs in `python -m bufferlint.verify.worker`: a hang,
a segfault or `os._exit` in user code costs one job, never the caller. Each job gets `timeout`
seconds from the moment the worker starts it; the worker's own start (Python and torch imports,
no user code) gets at least STARTUP_SECONDS, so a loaded CI machine does not fail a short
timeout. When a job times out or kills the worker, a fresh worker runs the rest.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Record = dict[str, Any]  # {"result": ...} | {"usage_error": str} | {"error": str}
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder that holds bufferlint/
_OUTPUT_TAIL_LINES = 5
STARTUP_SECONDS = 120.0


def run_jobs(
    jobs: list[dict[str, Any]], timeout: float, on_start: Callable[[int], None] | None = None
) -> list[Record]:
    """One record per job, in order. `on_start(i)` is called when job i begins."""
    records: dict[int, Record] = {}
    first = 0
    while first < len(jobs):
        offset = first
        done, failed_at, failure = _run_batch(jobs[first:], timeout, lambda i: on_start and on_start(offset + i))
        records.update({offset + i: record for i, record in done.items()})
        if failure is None:
            break
        records[offset + failed_at] = {"error": failure}
        first = offset + failed_at + 1
    return [records.get(i, {"error": "the verifier subprocess stopped before this job"}) for i in range(len(jobs))]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # the worker must import this very bufferlint, installed or not
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _run_batch(
    jobs: list[dict[str, Any]], timeout: float, on_start: Callable[[int], Any]
) -> tuple[dict[int, Record], int, str | None]:
    """(records by index, index of the job that failed, why) for one worker's life."""
    with tempfile.TemporaryDirectory(prefix="bufferlint-verify-") as tmp:
        request, results, log = Path(tmp, "request.json"), Path(tmp, "results.jsonl"), Path(tmp, "output.log")
        request.write_text(json.dumps(jobs), encoding="utf-8")
        with open(log, "wb") as log_file:
            timed_out, current, returncode = _supervise(request, results, log_file, timeout, on_start)
        done = _read_records(results)
        if len(done) == len(jobs) and not timed_out:
            return done, 0, None
        failed_at = current if timed_out else min(set(range(len(jobs))) - set(done))
        return done, failed_at, _failure_message(timed_out, timeout, returncode, log)


def _supervise(
    request: Path, results: Path, log_file: Any, timeout: float, on_start: Callable[[int], Any]
) -> tuple[bool, int, int]:
    """Start the worker and wait; (timed out?, index of the job running at the end, exit code)."""
    command = [sys.executable, "-m", "bufferlint.verify.worker", str(request), str(results)]
    if os.name != "posix":  # no fd passing: no progress, one deadline for the whole batch
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=_child_env())
        try:
            process.wait(timeout=timeout * max(1, len(json.loads(request.read_text()))))
            return False, 0, process.returncode
        except subprocess.TimeoutExpired:
            process.kill()
            return True, 0, process.wait()
    read_fd, write_fd = os.pipe()
    process = subprocess.Popen(
        [*command, str(write_fd)], stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
        env=_child_env(), pass_fds=(write_fd,), start_new_session=True,  # own group: kill its children too
    )
    os.close(write_fd)
    try:
        timed_out, current = _follow_progress(process, read_fd, timeout, on_start)
    finally:
        os.close(read_fd)
    return timed_out, current, process.wait()


def _follow_progress(
    process: subprocess.Popen, read_fd: int, timeout: float, on_start: Callable[[int], Any]
) -> tuple[bool, int]:
    current, deadline, pending = 0, time.monotonic() + max(timeout, STARTUP_SECONDS), b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill_group(process)
            return True, current
        # short waits: a child that user code forked may hold the pipe open after the worker exits
        ready, _, _ = select.select([read_fd], [], [], min(remaining, 0.25))
        if not ready:
            if process.poll() is not None:
                return False, current
            continue
        chunk = os.read(read_fd, 4096)
        if not chunk:  # the worker closed the pipe: it exited
            process.wait()
            return False, current
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            current, deadline = int(line), time.monotonic() + timeout
            on_start(current)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the worker and anything user code spawned
    except ProcessLookupError:
        pass
    process.wait()


def _read_records(results: Path) -> dict[int, Record]:
    records: dict[int, Record] = {}
    if not results.exists():
        return records
    for line in results.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a kill
            continue
        records[record.pop("index")] = record
    return records


def _failure_message(timed_out: bool, timeout: float, returncode: int, log: Path) -> str:
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-_OUTPUT_TAIL_LINES:]
    detail = f"; last output: {' | '.join(tail)}" if tail else ""
    if timed_out:
        return f"timed out after {timeout:g} s (user code still running; raise --timeout if it is just slow){detail}"
    return f"the verifier subprocess died while running user code (exit code {returncode}){detail}"
