"""What a rule is: a code, a kebab-case name, docs in the docstring, and a check over a file."""

from __future__ import annotations

from typing import ClassVar, Iterator, Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.file import FileAnalysis
from bufferlint.model import Finding, Fix

DOCS_URL = "https://github.com/bufferlint/bufferlint/blob/main/docs/rules.md#{code}"


class Rule:
    """Subclasses set the class variables, write their docs as the docstring, and define check()."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    default_enabled: ClassVar[bool] = True
    # Substrings one of which any file with a finding of this rule contains (the prefilter): a
    # module class is spelled through a torch import or through a module base outside torch.
    triggers: ClassVar[tuple[str, ...]] = ("torch", *torch_api.NON_TORCH_MODULE_BASE_NAMES)
    # A device finding in a file written for ONNX or ncnn export (`FileAnalysis.export_format`) is
    # no one's to act on: its modules are traced where they are built. lint.py skips such rules there.
    skips_export_files: ClassVar[bool] = False
    # Nor, unless `check-tests` asks for it, is a finding in a test or benchmark a runner collects
    # (`FileAnalysis.is_test_suite`): it builds its modules on the device it tests, often to
    # exercise the very pattern. Measured on the surveys: 18 false and 25 debatable findings there;
    # the 4 true ones were in evaluation scripts named test_*.py, which are checked. lint.py skips
    # such rules there.
    skips_test_files: ClassVar[bool] = False

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, analysis: FileAnalysis, node: cst.CSTNode, message: str, fix: Optional[Fix] = None) -> Finding:
        return Finding(
            code=self.code,
            name=self.name,
            message=one_line(message),
            filename=analysis.filename,
            node=node,
            fix=fix,
            url=DOCS_URL.format(code=self.code.lower()),
        )

    @classmethod
    def docs(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")


def one_line(message: str) -> str:
    """A message on one line: code quoted from a statement that spans several lines (a
    `torch.full(` whose arguments follow on the next lines) would break every line-oriented
    output format."""
    return message if "\n" not in message and "\r" not in message else " ".join(message.split())
