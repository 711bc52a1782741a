"""BUF005 register-buffer-result-used."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import RegisterBufferCall
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.grad import argument, is_literal
from bufferlint.analysis.walk import is_name, nodes_of
from bufferlint.fixes.misuse import keep_call_only
from bufferlint.model import Applicability, Finding, Fix
from bufferlint.rules.base import Rule


class RegisterBufferResultUsed(Rule):
    """The result of `register_buffer(...)` is assigned: it is always `None`.

    ## Why it matters
    `register_buffer` registers the tensor and returns `None`. In
    `self.mask = self.register_buffer("mask", m)` the assignment then runs
    `Module.__setattr__("mask", None)`, which replaces the buffer that was just registered:
    `self.mask` is `None`, `state_dict()` has no `mask`, and `forward()` fails with a confusing
    `TypeError` about `NoneType`. With different names (`self.my_buffer = self.register_buffer("B", t)`)
    the buffer `B` is fine but `self.my_buffer` is a plain attribute holding `None`; a local
    (`x = self.register_buffer(...)`) is `None` as well.

    ## Example
    ```python
    class Masked(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.mask = self.register_buffer("mask", torch.ones(n).tril())
    ```

    ## Instead
    ```python
            self.register_buffer("mask", torch.ones(n).tril())
    ```
    and read the buffer as `self.mask` (the name given to `register_buffer`).

    ## Fix safety
    The fix keeps only the call. It is safe when it proves both obligations, unsafe otherwise:
    1. `state_dict()` keys do not change: the buffer is non-persistent (`persistent=False`, by
       keyword or positionally) or registered as `None`. A persistent buffer becomes a real tensor,
       so `state_dict()` gains its key and checkpoints saved before the fix need
       `load_state_dict(strict=False)`.
    2. Nothing reads a different name: the assigned attribute is the buffer's own name (else code
       reading `self.my_buffer` must read `self.B`), or the target is a local that is never read.
    """

    code = "BUF005"
    name = "register-buffer-result-used"
    summary = "register_buffer returns None: the assignment discards the buffer"
    triggers = ("register_buffer",)

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        for info in analysis.module_classes:
            if info.defines_register_buffer():
                continue  # a custom register_buffer may well return something
            for registration in info.register_buffer_calls:
                statement = registration.site.small
                targets = _assigned_targets(statement, registration.call)
                if targets:
                    yield self._finding(analysis, registration, targets)

    def _finding(self, analysis: FileAnalysis, registration: RegisterBufferCall, targets: list[cst.BaseExpression]) -> Finding:
        owner = _owner(registration.call)
        message = "register_buffer() returns None: " + "; ".join(_effect(t, registration.name, owner) for t in targets)
        unsafe = [reason for t in targets if (reason := _unsafe_reason(t, registration, owner)) is not None]
        applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
        fix_message = "Keep only the register_buffer() call"
        if unsafe:
            fix_message += f" ({'; '.join(unsafe)})"
            message += f"; unsafe: {unsafe[0]}"
        fix: Fix = keep_call_only(registration.site.small, registration.call, applicability, fix_message)
        return self.finding(analysis, registration.site.small, message, fix)


def _effect(target: cst.BaseExpression, name: Optional[str], owner: str) -> str:
    """What the assignment does to `target`, in words."""
    if isinstance(target, cst.Attribute) and is_name(target.value, owner) and target.attr.value == name:
        return f"assigning it to `{_code(target)}` sets the buffer `{name}` to None"
    buffer = f"`{owner}.{name}`" if name else "registered under a computed name"
    return f"`{_code(target)}` is None, the buffer is {buffer}"


def _assigned_targets(statement: cst.BaseSmallStatement, call: cst.Call) -> list[cst.BaseExpression]:
    """The targets of `<targets> = <call>` where the value is exactly the register_buffer call."""
    if isinstance(statement, cst.Assign) and statement.value is call:
        return [t.target for t in statement.targets]
    if isinstance(statement, cst.AnnAssign) and statement.value is call:
        return [statement.target]
    return []


def _unsafe_reason(target: cst.BaseExpression, registration: RegisterBufferCall, owner: str) -> Optional[str]:
    name = registration.name
    if isinstance(target, cst.Name):
        if _is_read(registration.method, target.value, registration.site.small):
            return f"code reading `{target.value}` must read `{owner}.{name or '<buffer>'}`"
        return None
    if not (isinstance(target, cst.Attribute) and is_name(target.value, owner)):
        return f"`{_code(target)}` no longer receives None"
    if name is None:
        return f"code reading `{_code(target)}` must read the buffer by its registered name"
    if target.attr.value != name:
        return f"code reading `{_code(target)}` must read `{owner}.{name}`"
    if not _state_dict_neutral(registration.call):
        return f"`{name}` becomes a real persistent buffer: state_dict() gains the key `{name}`"
    return None


def _state_dict_neutral(call: cst.Call) -> bool:
    """Non-persistent, or registered as None: the buffer is not saved either way."""
    return is_literal(argument(call, "persistent", 2), "False") or is_literal(argument(call, "tensor", 1), "None")


def _is_read(method: cst.FunctionDef, name: str, statement: cst.BaseSmallStatement) -> bool:
    uses = [node for node in nodes_of(method.body, cst.Name) if node.value == name]
    targets = {id(node) for node in nodes_of(statement, cst.Name) if node.value == name}
    return any(id(node) not in targets for node in uses)


def _owner(call: cst.Call) -> str:
    func = call.func
    assert isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
    return func.value.value


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
