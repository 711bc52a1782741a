"""Output formats: each module renders a list of findings plus a run summary."""

from __future__ import annotations

from typing import Callable

from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary

Formatter = Callable[[list[Finding], RunSummary], str]

FORMATS = ("concise", "full", "json", "json-lines", "github", "gitlab", "junit", "sarif")


def formatter(name: str) -> Formatter:
    from bufferlint.output import concise, full, github, gitlab, json_format, junit, sarif

    formats: dict[str, Formatter] = {
        "concise": concise.render,
        "full": full.render,
        "json": json_format.render,
        "json-lines": json_format.render_lines,
        "github": github.render,
        "gitlab": gitlab.render,
        "junit": junit.render,
        "sarif": sarif.render,
    }
    return formats[name]
