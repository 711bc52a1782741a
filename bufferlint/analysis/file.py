"""Everything bufferlint knows about one parsed file, computed once and shared by all rules."""

from __future__ import annotations

import ast
import functools
import os
import re
import warnings
from functools import cached_property
from typing import Iterable, Mapping, Optional, Union

import libcst as cst
from libcst.metadata import CodeRange

from bufferlint.analysis.classes import REGISTRATIONS, ClassCollector, ClassInfo, ValueKind
from bufferlint.analysis.flow import self_name
from bufferlint.analysis.mentions import Mentions
from bufferlint.analysis.modules import ModuleClassResolver, class_infos
from bufferlint.analysis.names import ImportMap
from bufferlint.analysis.positions import NodePositions
from bufferlint.analysis.project_facts import EMPTY, TEST_FOLDERS, Lineage, ProjectFacts, export_variant, is_test_module
from bufferlint.prefilter import text_gate
from bufferlint.source import ascii_spelled, line_starts, parse
from bufferlint.analysis.returns import ReturnTypes, module_functions
from bufferlint.analysis.module_tensors import MODULE_TENSOR_TEXT, module_tensors
from bufferlint.analysis.tensors import Scope, TensorInference
from bufferlint.analysis.walk import nodes_of


@functools.lru_cache(maxsize=8)
def _spelling_pattern(word: str) -> str:
    prefixes = "|".join(re.escape(word[:n]) for n in range(1, len(word)))
    return r"\\[xuUN0-7\r\n]" + (f"|(?:{prefixes})[\"']" if prefixes else "")


def _spells(word: str, text: Union[bytes, str]) -> bool:
    """Whether `text` holds `word`, an escape, or a literal ending in a first part of `word`
    (for bytes, only in an encoding that writes ASCII as ASCII: `may_mention` checks that first)."""
    pattern = _spelling_pattern(word)
    if isinstance(text, bytes):
        return word.encode() in text or re.search(pattern.encode(), text) is not None
    return word in text or re.search(pattern, text) is not None


# Calls that fail without a GPU: at module level they make the whole file GPU-only.
# `.name(`, spaces and line continuations allowed: every call of a method through an attribute.
_CALLED_ATTRIBUTE = re.compile(r"\.[\s\\]*(\w+)[\s\\]*\(")
_CALLED_ATTRIBUTE_BYTES = re.compile(_CALLED_ATTRIBUTE.pattern.encode())
_CUDA_AT_IMPORT = frozenset(("torch.cuda.set_device", "torch.cuda.init", "torch.cuda.get_device_name", "torch.cuda.current_device"))


class FileAnalysis:
    """The parsed module, its imports, and the facts about each nn.Module subclass in it."""

    def __init__(
        self,
        module: cst.Module,
        filename: str,
        extra_bases: Iterable[str] = (),
        text: Optional[Union[bytes, str]] = None,
        functions: Optional[Mapping[str, cst.FunctionDef]] = None,
        regions: Optional[Mapping[str, tuple[int, int]]] = None,
        project: ProjectFacts = EMPTY,
        partial: bool = False,
    ) -> None:
        self.module = module
        self._partial = partial  # `module` leaves out lines of `text` (pruning.py)
        self.filename = filename
        self.project = project
        self.enabled: frozenset[str] = frozenset()  # codes of the rules the run checks (set by lint.check_module)
        self._text = text  # the source `module` was parsed from, when the caller has it
        # `regions`: first and last line in `text` of top-level classes, by name (prechecked.py).
        self._regions = regions or {}
        self.imports = ImportMap.from_module(module)
        self.mentions = Mentions()
        # `functions`: top-level functions a check left out of `module` (pruning.py), looked up
        # (and parsed) by name only when a call needs to know whether one returns a tensor.
        self._helpers = ReturnTypes(module_functions(module), functions or {})
        self._left_out_functions = tuple(functions or ())
        self.inference = TensorInference(self.imports, self._helper_returns_tensor, self._module_tensor)
        self.resolver = ModuleClassResolver(self.imports, extra_bases)
        self.classes: list[ClassInfo] = class_infos(module)
        self.resolver.resolve(self.classes)
        collector = ClassCollector(self.inference, self.resolver.is_module_call, self.may_mention(*REGISTRATIONS))
        for info in self.module_classes:
            self._collect(info, collector)

    def release(self) -> None:
        """Forget everything, once the rules are done with this file. The analysis and what it
        caches refer to each other (the inference asks `_helper_returns_tensor`, per-class facts keep
        the analysis), so without this the tree stays alive until the cyclic garbage collector
        finds it. Those collections walked whole dead trees: 1.9 s of a 19 s cold run on the
        benchmark corpus, 0.09 s once trees are freed here. The findings keep only their own nodes."""
        self.__dict__.clear()

    @property
    def partial(self) -> bool:
        """Whether `module` leaves out lines of the file (pruning.py): statements not in it may exist."""
        return self._partial and self._text is not None

    @cached_property
    def whole_module(self) -> cst.Module:
        """The whole file, also where a check parsed only part of it: a proof that must see every
        line (no call of a class passes an argument: never_given.py) reads this one. It is
        parsed only when such a proof is asked for."""
        if not self._partial or self._text is None:
            return self.module
        return parse(self._text, checked=True)  # CPython parsed this text already (prechecked.py)

    @cached_property
    def whole_ast(self) -> ast.Module:
        """The whole file on CPython's ast (also where a check parsed only part of it with libcst):
        for proofs that must see every line and only need names and shapes of statements."""
        source: Union[bytes, str] = self._text if self._text is not None else self.module.code
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CPython accepted this text already; its warnings were the check's
            return ast.parse(source)

    @cached_property
    def module_tensors(self) -> frozenset[str]:
        """The file's module-level tensor constants (`IMAGENET_MEAN = torch.tensor([...])`,
        module_tensors.py)."""
        return module_tensors(self.whole_ast) if self.may_match(MODULE_TENSOR_TEXT) else frozenset()

    def _module_tensor(self, name: str) -> bool:
        return name.isupper() and name in self.module_tensors

    def may_match(self, pattern: "re.Pattern[bytes]") -> bool:
        """Whether the file's text may hold a match of `pattern` (True when the text is unknown or
        not spelled in ASCII bytes): a cheap test before walking the whole file."""
        text = self._text
        if text is None or (isinstance(text, bytes) and not ascii_spelled(self.module.encoding)):
            return True
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        return pattern.search(data) is not None

    def _may_call(self, method: str) -> bool:
        """Whether the text may call `method` as an attribute (`self.build(`): a method it never
        calls need not be asked whether it returns a tensor."""
        names = self._called_attributes
        return names is None or method in names

    @cached_property
    def _called_attributes(self) -> Optional[frozenset[str]]:
        text = self._text
        if text is None or (isinstance(text, bytes) and not ascii_spelled(self.module.encoding)):
            return None
        if isinstance(text, bytes):
            return frozenset(name.decode() for name in _CALLED_ATTRIBUTE_BYTES.findall(text))
        return frozenset(_CALLED_ATTRIBUTE.findall(text))

    def may_mention(self, *words: str) -> bool:
        """Whether the file's text holds one of `words` (True when the text is unknown): a name
        that is not in the text is in no node either, so analyses can skip looking for it."""
        text = self._text
        if text is None:
            return True
        if isinstance(text, bytes) and not ascii_spelled(self.module.encoding):
            return True  # in UTF-7, say, a name need not be spelled with its ASCII bytes
        return text_gate(text, words)

    def may_spell(self, word: str) -> bool:
        """Whether some name or string of the file may be or hold `word` (as `Mentions` reads them:
        string values, `"cu" "da"` joined). Without the text itself, only an escape (`\\x63`, a
        backslash-newline inside a string) or a literal that ends in a first part of `word` (`"cu"`,
        then `"da"`) could spell it."""
        if self.may_mention(word):
            return True
        assert self._text is not None  # may_mention answered True otherwise
        return _spells(word, self._text)

    def class_may_spell(self, info: ClassInfo, word: str) -> bool:
        """`may_spell` for the lines of one top-level class, when they are known."""
        if not self.may_spell(word):
            return False
        region = self._regions.get(info.name)
        if region is None or id(info.node) not in self._top_level_ids:
            return True  # a nested class, or no line numbers: the file's answer
        return _spells(word, self._lines(*region))

    def _lines(self, first: int, last: int) -> Union[bytes, str]:
        text = self._text
        assert text is not None  # regions come with the text they number
        starts = self._line_starts
        end = starts[last] if last < len(starts) else len(text)
        return text[starts[first - 1] : end]

    @property
    def top_level_ids(self) -> frozenset[int]:
        """Ids of the module's top-level statements (classes among them)."""
        return self._top_level_ids

    @cached_property
    def _top_level_ids(self) -> frozenset[int]:
        # Once per file, not per class: a scan of the module's statements per class made a file
        # of n classes cost n². (The module keeps the statements, so their ids stay theirs.)
        return frozenset(id(stmt) for stmt in self.module.body)

    @cached_property
    def _line_starts(self) -> list[int]:
        assert self._text is not None
        return line_starts(self._text)

    def lineage(self, info: ClassInfo) -> Optional[Lineage]:
        """What the project facts say about the bases of a top-level class in other files; None
        without facts (an API call on one source) or for a class they do not index (a nested one)."""
        if not self.project.known or id(info.node) not in self._top_level_ids:
            return None
        return self.project.lineage(f"{self.module_name}.{info.name}")

    def qualified(self, info: ClassInfo) -> str:
        return f"{self.module_name}.{info.name}"

    @cached_property
    def cuda_at_import(self) -> Optional[str]:
        """A module-level call that needs a GPU (`torch.cuda.set_device(0)`): the file cannot even be
        imported without CUDA, so whatever it pins or leaves on one device runs on the GPU by design."""
        if not self.may_mention("cuda"):
            return None
        for statement in self.module.body:
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                value = getattr(small, "value", None)
                called = self.inference.qualify(value.func) if isinstance(value, cst.Call) else None
                if called in _CUDA_AT_IMPORT:
                    return f"{called}()"
        return None

    @cached_property
    def test_local_classes(self) -> frozenset[int]:
        """In a test module, the ids of the classes defined inside a function: a test builds them
        to exercise a pattern on purpose (empty elsewhere)."""
        if not self.is_test:
            return frozenset()
        return frozenset(id(node) for func in nodes_of(self.module, cst.FunctionDef) for node in nodes_of(func.body, cst.ClassDef))

    @cached_property
    def is_test(self) -> bool:
        """A test or benchmark module (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`,
        `benchmarks/`, `benchmark_*.py`), also in a folder that is no package (`tests/helpers.py`)."""
        return is_test_module(self.module_name) or self._folder in TEST_FOLDERS

    @cached_property
    def _folder(self) -> str:
        """The name of the folder the file is in (a package or not)."""
        return os.path.basename(os.path.dirname(os.path.abspath(self.filename)))

    @cached_property
    def is_test_suite(self) -> bool:
        """A test or benchmark that a runner collects: in a `tests/`-like folder, or named like a
        test (`test_*.py`) and defining test functions or classes or importing pytest or
        unittest. `demo/test_ap_on_coco.py`, an evaluation script run as `__main__`, is not."""
        if not self.is_test:
            return False
        if any(folder in TEST_FOLDERS for folder in (*self.module_name.split(".")[:-1], self._folder)):
            return True
        if any(q.split(".")[0] in ("pytest", "unittest") for q in self.imports.aliases.values()):
            return True
        defined = [s.name.value for s in self.module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        return any(name.startswith(("test", "Test")) for name in (*defined, *self._left_out_functions))

    @cached_property
    def function_names(self) -> frozenset[str]:
        """The top-level functions of the file, by name (those pruning left out too)."""
        defined = (s.name.value for s in self.module.body if isinstance(s, cst.FunctionDef))
        return frozenset((*defined, *self._left_out_functions))

    @cached_property
    def export_format(self) -> Optional[str]:
        """The format the file's modules are written to be exported to (`model_onnx.py`: "onnx"),
        or None. Their devices are the tracer's business: no device finding is anyone's to act on.
        A file named for exporting (`ensemble_export.py`, `exporter.py`) that uses `torch.onnx` is
        written for ONNX too."""
        found = export_variant(self.module_name)
        words = re.split(r"[^a-z0-9]+", self.module_name.rpartition(".")[2].lower())
        if found is None and any(word.startswith("export") for word in words):
            text = self._text if self._text is not None else self.module.code
            if (b"torch.onnx" if isinstance(text, bytes) else "torch.onnx") in text:  # type: ignore[operator]
                return "onnx"
        return found

    @cached_property
    def module_name(self) -> str:
        from bufferlint.analysis.project import module_name

        return module_name(self.filename)

    @property
    def module_classes(self) -> list[ClassInfo]:
        return [info for info in self.classes if info.is_module]

    def function(self, name: str) -> Optional[cst.FunctionDef]:
        """A top-level function of the file (parsed now if a check left it out of the tree)."""
        return self._helpers.functions.get(name) or self._helpers.blanked.get(name)

    def _helper_returns_tensor(self, name: str) -> bool:
        return self._helpers.returns_tensor(name, self.inference, lambda func: Scope())

    def _collect(self, info: ClassInfo, collector: ClassCollector) -> None:
        collector.collect_body(info)
        # Two passes: the first learns which attributes hold tensors, the second uses that to
        # classify values such as `self.pe[:, :n]` or `self.mask.float()`.
        collector.collect_methods(info, frozenset(), frozenset())
        methods = ReturnTypes(info.methods)
        tensor_attrs = frozenset(
            {a.attr for a in info.assignments if a.kind in (ValueKind.TENSOR, ValueKind.PARAMETER, ValueKind.BUFFER)}
            | info.registered_buffers
            | info.registered_parameters
        )

        def scope_for(func: cst.FunctionDef) -> Scope:
            return Scope(self_name(func), set(), tensor_attrs, frozenset())

        # Only what the class calls on self matters to the second pass (`self.x = self.build()`);
        # asked in method order: a verdict may consult the file's helpers, whose memo (and its
        # recursion guard) makes answers depend on the order of asking.
        tensor_methods = frozenset(
            name for name in info.methods
            if self._may_call(name) and methods.returns_tensor(name, self.inference, scope_for)
        )
        if tensor_attrs or tensor_methods:  # else the second pass would see what the first saw
            collector.collect_methods(info, tensor_attrs, tensor_methods, again=True)

    @cached_property
    def _positions(self) -> NodePositions:
        # Only computed when a finding needs a position, and only for the nodes asked for: whole-
        # tree position metadata costs as much as parsing the file again (see positions.py).
        return NodePositions(self.module)

    def prepare_positions(self, nodes: "Iterable[cst.CSTNode]") -> None:
        """Compute the positions of all these nodes in one pass (before asking for each)."""
        self._positions.add(nodes)

    def position(self, node: cst.CSTNode) -> Optional[CodeRange]:
        return self._positions.get(node)
