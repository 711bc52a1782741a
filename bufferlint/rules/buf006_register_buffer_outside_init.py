"""BUF006 register-buffer-outside-init."""

from __future__ import annotations

from typing import Iterator

from bufferlint.analysis.cache_guards import cache_guard
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import self_name
from bufferlint.analysis.forward import forward_facts
from bufferlint.analysis.paths import always_runs
from bufferlint.model import Finding
from bufferlint.rules.base import Rule


class RegisterBufferOutsideInit(Rule):
    """`register_buffer` called in `forward` (or a method `forward` calls): it re-registers on
    every call. Off by default: enable it with `--select BUF006` or `extend-select`.

    ## Why it matters
    Registering belongs to construction. Called from `forward`, `register_buffer` runs on every
    step: it re-checks the name, rebuilds the buffer entry, and a buffer that first appears
    during `forward` is missing from a `state_dict()` or an optimizer/DDP setup taken before the
    first call (DDP collects the buffers it syncs when it is constructed). Some code does it on
    purpose, to cache a tensor on the input's device, which is why the rule is off by default.

    ## Example
    ```python
        def forward(self, x):
            self.register_buffer("pos", torch.arange(x.shape[1], device=x.device), persistent=False)
            return x + self.pos
    ```

    ## Instead
    Register once in `__init__` (a placeholder is fine) and assign in `forward`; assigning a
    tensor to a registered buffer's name updates the buffer:
    ```python
        def __init__(self):
            super().__init__()
            self.register_buffer("pos", None, persistent=False)

        def forward(self, x):
            self.pos = torch.arange(x.shape[1], device=x.device)
            return x + self.pos
    ```

    Not reported: a registration behind a test (`if not hasattr(self, "pos"):`, a cache found
    missing or too short) or after an early return taken while the cache is fresh
    (`if self.pos is not None and self.pos.shape[-1] >= n: return ...`), which runs once or when
    the cache is rebuilt, not on every call.

    ## Fix safety
    No fix: where the registration belongs and what it should hold needs a person.
    """

    code = "BUF006"
    name = "register-buffer-outside-init"
    summary = "register_buffer in forward re-registers the buffer on every call"
    default_enabled = False
    triggers = ("register_buffer",)

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        for info in analysis.module_classes:
            if not info.register_buffer_calls:
                continue
            per_call = {id(method.func) for method in forward_facts(analysis, info).methods}
            for registration in info.register_buffer_calls:
                if id(registration.method) not in per_call or not always_runs(registration.site.top, registration.site.line):
                    continue  # not on the path, or behind a test (`if not hasattr(self, "pos")`, a stale cache)
                me = self_name(registration.method)
                if me is not None and cache_guard(registration.method, me, registration.site) is not None:
                    continue  # after `if <cache is fresh>: return ...`: it runs on a cache miss
                method = registration.method.name.value
                buffer = f"`{registration.name}`" if registration.name else "a buffer"
                where = "forward()" if method == "forward" else f"{method}() (reached from forward())"
                message = (
                    f"register_buffer() in {where} registers {buffer} again on every call; register it once "
                    "in __init__ (None is fine) and assign the tensor here; no fix: where the registration belongs "
                    "and what it should hold first needs a person"
                )
                yield self.finding(analysis, registration.call, message)
