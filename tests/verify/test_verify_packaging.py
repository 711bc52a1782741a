"""torch stays out of the static tool; the progress display stays out of logs."""
from __future__ import annotations

import io

from bufferlint.verify.progress import Progress
from verify_support import models_target, run_python

NO_TORCH = """
import sys
import bufferlint, bufferlint.verify, bufferlint.verify.cli, bufferlint.verify.api, bufferlint.verify.progress
import bufferlint.pytest_plugin
assert "torch" not in sys.modules, "imported torch"
code = bufferlint.verify.cli.main(["no_such_file.py::Net"])  # a usage error needs no worker
assert code == 2 and "torch" not in sys.modules
print("ok")
"""


def test_importing_bufferlint_and_verify_does_not_import_torch() -> None:
    done = run_python(["-c", NO_TORCH])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    assert done.stderr == "bufferlint verify: error: bad target 'no_such_file.py::Net': no such file no_such_file.py\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal() -> None:
    stream = Terminal()
    with Progress(total=2, stream=stream) as progress:
        progress.advance("Attention")
        progress.advance("MLP")
    assert stream.getvalue() == "\r\x1b[Kverifying 1/2 Attention...\r\x1b[Kverifying 2/2 MLP...\r\x1b[K"


def test_progress_is_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with Progress(total=1, stream=stream) as progress:
        progress.advance(models_target("Buffered"))
    assert stream.getvalue() == "" and progress.done == 1
