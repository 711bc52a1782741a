"""The words a function mentions, so a rule can skip a method that cannot hold what it looks for.

A word is a name (`cuda`), an attribute name (`x.cuda` gives `cuda`) or the value of a string
literal (`"cuda:0"`). A rule gates on them before its costly per-statement flow analysis: BUF004
only walks methods that mention `cuda`. Each function is walked once per file.
"""

from __future__ import annotations

import libcst as cst

from bufferlint.analysis.walk import nodes_of


class Mentions:
    """Words per function node, computed on first use (one instance per analysed file)."""

    def __init__(self) -> None:
        # Keyed by id(); the node is kept in the value so its id cannot be reused meanwhile.
        self._words: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}

    def words(self, node: cst.CSTNode) -> frozenset[str]:
        known = self._words.get(id(node))
        if known is None:
            known = self._words[id(node)] = (node, _collect(node))
        return known[1]

    def mentions(self, node: cst.CSTNode, word: str) -> bool:
        """Whether `word` is part of some word of `node` (`cuda` is part of `cuda:0`)."""
        return any(word in found for found in self.words(node))


_WORD_NODES = (cst.Name, cst.FormattedStringText, cst.SimpleString, cst.ConcatenatedString)


def _collect(root: cst.CSTNode) -> frozenset[str]:
    words: set[str] = set()
    # Exact type tests (these classes have no subclasses): `isinstance` on libcst's abstract node
    # classes goes through ABCMeta.
    name, text = cst.Name, cst.FormattedStringText
    for node in nodes_of(root, _WORD_NODES):
        kind = type(node)
        if kind is name or kind is text:
            words.add(node.value)  # type: ignore[attr-defined]
        else:
            words.add(_string_text(node))  # type: ignore[arg-type]
    return frozenset(words)


def _string_text(node: cst.BaseExpression) -> str:
    """The text between the quotes (`"cu" "da"` gives `cuda`); escapes are evaluated, which only
    strings holding a backslash need (evaluating every literal would parse each one)."""
    if isinstance(node, cst.ConcatenatedString):
        return _string_text(node.left) + _string_text(node.right)
    if not isinstance(node, cst.SimpleString):
        return ""  # an f-string part: its text parts are words of their own
    if "\\" not in node.value:
        return node.raw_value
    try:
        value = node.evaluated_value
    except Exception:  # noqa: BLE001 - libcst evaluates with literal_eval; an odd literal is no word
        return node.raw_value
    return value if isinstance(value, str) else node.raw_value
