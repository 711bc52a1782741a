"""Output formats: each module renders a list of findings plus a run summary."""

from __future__ import annotations

from typing import Callable

from bufferlint.output.summary import RunSummary
from bufferlint.model import Finding

Formatter = Callable[[list[Finding], RunSummary], str]


def formatter(name: str) -> Formatter:
    from bufferlint.output import concise, json_format

    formats: dict[str, Formatter] = {
        "concise": concise.render,
        "json": json_format.render,
        "json-lines": json_format.render_lines,
    }
    return formats[name]


FORMATS = ("concise", "json", "json-lines")
