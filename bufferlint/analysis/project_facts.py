"""What the linted files say about each other, gathered by the project scan (analysis/project.py).

A fix is safe only when it is proved, and some of what it must prove lies in other files: a base
class defined elsewhere may already set the attribute the fix registers (`register_buffer` then
raises KeyError), a subclass may bind the name, a training script may unfreeze a "frozen"
parameter by name, and a codebase that builds its models on the meta device never restores
non-persistent buffers. The scan reads every file once with `ast`; this module adds, per file:

- per top-level class: the names its methods store on `self`, the names it registers as buffers or
  parameters, the names bound in its body, the methods it calls on `self`, and whether it sets
  attributes under names that are not spelled out (`setattr(self, name, ...)`, `__dict__`);
- the file's parameter unfreezing sites, and where it builds modules on the meta device;
- its top-level functions that build complex tensors.

Reading is cheap on purpose (it runs on every file of a cold run): class facts come from
statements only (assignment targets and statement-level calls), never from a walk of every
expression; the file-level facts come from regular expressions over the bytes. Both err on the
side of "may": a name they miss would make a fix unsafe, never a finding false.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from bufferlint.analysis import holder_casts
from bufferlint.analysis.ast_reading import called_name, nodes_on_lines
from bufferlint.analysis.optimizer_builds import Build, optimizer_builds, trainable_only
from bufferlint.analysis.constructions import Construction, constructions, gives, only_built
from bufferlint.analysis.conventions import SETTINGS_OBJECTS
from bufferlint.analysis.torch_api import is_module_base

# Methods through which a class moves its own state (a class defining one manages its devices).
MOVE_METHODS = frozenset(("_apply", "to", "cuda", "cpu", "half", "float", "double", "type", "bfloat16"))

# Literal words one of which any match of `_META_INIT` contains.
_META_WORDS = (b"'meta'", b'"meta"', b"to_empty(", b"init_empty_weights", b"skip_init(", b"empty_init")
# Literal words one of which any match of `_COMPLEX` contains.
# (`1j` stands for the imaginary literals: `torch.exp(1j * angles)`; ten digit scans cost more.)
_COMPLEX_WORDS = (b"complex", b"polar", b"cfloat", b"cdouble", b"chalf", b"1j")
# Where a file may turn requires_grad on (read with `ast` only when one of these is there).
_UNFREEZE_SITE = re.compile(rb"\.requires_grad[ \t]*=[^=]|\.requires_grad_\(|\bmake_trainable\(")
# Lightning's `BaseFinetuning.make_trainable(...)` turns requires_grad on wholesale.
_UNFREEZE_HELPERS = re.compile(rb"\bmake_trainable\(")
# Building modules without their data (then `to_empty()` and a `state_dict` load).
# (`x.device == torch.device("meta")` asks where a tensor is, and accelerate's
# `init_empty_weights()` leaves buffers real unless given `include_buffers=True`.)
_META_INIT = re.compile(
    rb"\.to_empty\(|device[ \t]*=[ \t]*[\"']meta[\"']|(?<![=!]=)(?<![=!]= )torch\.device\([ \t]*[\"']meta[\"']"
    rb"|\binit_empty_weights\([^)\n]*include_buffers[ \t]*=[ \t]*True|\bskip_init\(|\bempty_init[ \t]*=[ \t]*True"
)
# Restoring an optimizer's state (or a trainer's, which holds it): resuming breaks when a
# parameter turns into a buffer, since the optimizer then covers one tensor fewer.
# (`resume` also covers `resume_from_checkpoint`, `runner.resume(` and mmengine's `cfg.resume = True`)
_RESUME_WORDS = (b"load_state_dict(", b"ckpt_path", b"load_state(", b"resume")
_OPTIMIZER_RESUME = re.compile(
    rb"opt\w*(?:\[[^\]\n]*\])?[ \t]*\.[ \t]*load_state_dict\(|load_state_dict\([^)\n]*(?:opt|resume)"
    rb"|\bresume_from_checkpoint\b|\.fit\([^)]*?\bckpt_path[ \t]*=|\baccelerator\w*[ \t]*\.[ \t]*load_state\("  # a layer's `.load_state(...)` loads weights
    rb"|\brunner\.resume\("  # mmcv's runner restores the optimizer with the model
    rb"|\bresume[ \t]*=[ \t]*True\b"  # mmengine's `cfg.resume = True` (`tools/train.py --resume`), `Runner(resume=True)`
    rb"|\bcfg\.resume_from[ \t]*=(?!=)"  # mmcv's `cfg.resume_from = args.resume_from`: its runner then resumes
)
# Names under which code unfreezes parameters it iterates or is handed (`for p in ...parameters()`).
_PARAMETER_LIKE = re.compile(r"param|weight|bias|^p$|^w$|^m$|model|module|net|layer|encoder|decoder|backbone|head|block")
# Tensor methods whose result is a fresh tensor (`x.detach().requires_grad_()` is an input, not a parameter).
_FRESH_TENSOR_METHODS = frozenset(
    "detach clone to float double half cuda cpu contiguous view reshape new_tensor "
    # methods only a tensor has (`actions.unsqueeze(0).repeat(n, 1, 1).requires_grad_()`: an input to differentiate)
    "repeat repeat_interleave unsqueeze squeeze expand expand_as permute transpose flatten new_zeros new_ones new_full new_empty".split()
)
# The project creates tensors on the GPU by default (`torch.set_default_device("cuda")`).
_DEFAULT_DEVICE = re.compile(rb"\bset_default_device\(|\bset_default_tensor_type\([^)\n]*cuda")
# Whole modules pickled and restored, or parameters and buffers copied by name between two
# versions of a module (StyleGAN's `copy_params_and_buffers(..., require_all=True)`, its
# `persistence.persistent_class` and `load_network_pkl`, dill pickles of models): a module saved
# before a fix lacks the buffer the fix adds. (Plain `pickle.load` mostly reads data: not counted.)
_PICKLE_WORDS = (b"dill", b"copy_params_and_buffers", b"persistent_class", b"load_network_pkl")
_PICKLES = re.compile(rb"\bdill\.loads?\(|\bcopy_params_and_buffers\b|\bpersistent_class\b|\bload_network_pkl\(")
# A `with` whose context is a device: `with torch.device(d):`, `with self._device:`.
_DEVICE_CONTEXT = re.compile(rb"\bwith\b[^\n:]*device")
# `<object>.<name> = ...` at the start of a line: an attribute set on some object from outside it
# (`self.model.loss.quantiles = q`, `m.weight = w`; `self.<name> =` is the object's own). Tuple
# targets and chained assignments are not read.
# (`self.x = v` itself, the most common line of all, is passed over by the pattern: no holder.)
_SET_FROM_OUTSIDE = re.compile(
    rb"(?m)^[ \t]*(?!(?:self|cls)\.\w+[ \t]*(?::[^=\n]*)?=(?!=))"
    rb"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]\n]*\])*)\.([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)"
)
# Names of objects that carry a program's settings (`args.eos = 2`): setting one sets no module's attribute.
_SETTINGS_OBJECTS = frozenset(name.encode("ascii") for name in SETTINGS_OBJECTS)
_COMPLEX = re.compile(rb"polar|view_as_complex|cfloat|cdouble|chalf|complex(?:32|64|128|\()|[0-9][jJ](?![0-9A-Za-z_])")


@dataclass(frozen=True)
class ClassFacts:
    """One class of the project, as its own statements show it (inherited facts are not merged in)."""

    binds: tuple[str, ...] = ()  # names its methods store on self (any target form, setattr with a literal)
    registered: tuple[str, ...] = ()  # names it registers as buffers or parameters
    body: tuple[str, ...] = ()  # names bound in the class body: class attributes, methods, properties
    self_calls: tuple[str, ...] = ()  # methods it calls on self in statement position or as an assigned value
    dynamic: bool = False  # stores attributes under names not spelled out
    stateful: bool = False  # creates parameters, buffers or submodules
    moved: tuple[str, ...] = ()  # names its `to`/`_apply`/... overrides move (self attributes, strings)
    moves_all: bool = False  # an override moves every tensor attribute (through dir(), vars(), __dict__)
    holds: tuple[str, ...] = ()  # classes it instantiates into its own attributes (`self.pe = PE(...)`), by name
    registers_unnamed: bool = False  # registers buffers under names no literal spells out
    walks_buffers: Optional[str] = None  # the method that iterates its buffers (`self.named_buffers()`)
    # attributes its move overrides assign on objects it holds (`self.detect.stride = fn(self.detect.stride)`)
    moves_held: tuple[str, ...] = ()
    # methods that register a buffer under the name they are given (`def register(self, name, t)`):
    # they register what their callers name, not names of their own
    registers_via: tuple[str, ...] = ()
    # `Class:attr` for each class it builds straight into an attribute (`self.backbone = Net(...)`):
    # the prefix of that class's parameter names in this one's (`backbone.<name>`)
    held_as: tuple[str, ...] = ()

    def to_json(self) -> list[Any]:
        return [
            self.binds, self.registered, self.body, self.self_calls, int(self.dynamic), int(self.stateful),
            self.moved, int(self.moves_all), self.holds, int(self.registers_unnamed), self.walks_buffers, self.moves_held,
            self.registers_via, self.held_as,
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> "ClassFacts":
        binds, registered, body, calls, dynamic, stateful, moved, moves_all, holds, unnamed, walks, held, via, held_as = data
        return cls(
            tuple(binds), tuple(registered), tuple(body), tuple(calls), bool(dynamic), bool(stateful),
            tuple(moved), bool(moves_all), tuple(holds), bool(unnamed), walks, tuple(held), tuple(via), tuple(held_as),
        )

    def moves(self, attr: str) -> bool:
        """Whether one of its move overrides moves `self.<attr>` with the module."""
        return self.moves_all or attr in self.moved


@dataclass
class FileFacts:
    """The facts of one file; `classes` and `complex_functions` hold qualified names."""

    classes: dict[str, ClassFacts] = field(default_factory=dict)
    unfrozen: tuple[str, ...] = ()  # `<x>.<name>.requires_grad = <not False>`: the names
    unfreezes_any: Optional[int] = None  # line of the first unfreezing that names no parameter
    unfreeze_words: tuple[str, ...] = ()  # with it: the file's string constants (a filter may name a parameter)
    meta_init: Optional[int] = None  # line of the first meta-device construction or to_empty()
    default_device: Optional[int] = None  # line of the first `torch.set_default_device(...)`
    resumes_optimizer: Optional[int] = None  # line of the first optimizer (or trainer) state load
    functions: tuple[str, ...] = ()  # top-level functions
    complex_functions: tuple[str, ...] = ()  # those of them that may build complex tensors
    imports: tuple[str, ...] = ()  # what its top-level imports name, qualified (`from m import *`: `*m`)
    pickles: Optional[int] = None  # line of the first pickle load or name-matched parameter/buffer copy
    # where one of its classes moves the tensors of a module it holds: what any import of the
    # file names (in functions too), qualified, the classes the held module may be
    reaches: tuple[str, ...] = ()
    # methods it calls on an object inside `with torch.device(...)`, with the line of the first call
    device_context_calls: tuple[tuple[str, int], ...] = ()
    exports: Optional[tuple[str, ...]] = None  # a literal top-level `__all__`: what `from m import *` takes
    set_outside: tuple[tuple[str, int], ...] = ()  # `<object>.<name> = ...` (not `self.<name>`): name, first line
    # `self.requires_grad_(True)` / `self.<attr>.requires_grad_(True)` in a method of a top-level
    # class: (the class, qualified; the line): it unfreezes every module the instance holds
    unfreezes_held: tuple[tuple[str, int], ...] = ()
    # capitalised names (class names, as code spells them): how often the file mentions each, and
    # how many of those build a throwaway instance (`Pool(mode)(x)`, or `n = Norm(a, b)` in a
    # function that only ever calls `n(...)`): (name, mentions, throwaway)
    class_mentions: tuple[tuple[str, int, int], ...] = ()
    # a cast override that puts a held module back in float32 (analysis/holder_casts.py):
    # (the holder, qualified; its attribute; the class built into it, by name; the line)
    recasts_held: tuple[tuple[str, str, str, int], ...] = ()
    # `<object>.<name> = <a plain Python value>` (`layer.anchors = [float(a) for a in s]`): name, first line
    set_outside_plain: tuple[tuple[str, int], ...] = ()
    # line of a requirement pinning torch below 1.6 (`"torch==1.4.0"` in setup.py), whose
    # register_buffer takes no `persistent=`
    old_torch: Optional[int] = None
    # its optimizer builds (analysis/optimizer_builds.py): (callee, line, only trainable parameters
    # reach it), and the names of its functions and methods that say optimizer
    optimizer_builds: tuple[Build, ...] = ()
    optimizer_builders: tuple[str, ...] = ()
    # calls of capitalised bare names, with what each gives, and the names the file mentions
    # only in such calls (analysis/constructions.py)
    constructions: tuple[Construction, ...] = ()
    only_built: tuple[str, ...] = ()
    # with `unfreezes_any`: the strings the file tests names against (`"backbone" in name`,
    # `name.startswith("encoder.")`): a filter over qualified parameter names
    unfreeze_filters: tuple[str, ...] = ()
    # a loop of a method of a top-level class over the parameters of some of the modules the
    # instance holds (`for b in [self.enc1, self.enc2]: for p in b.parameters(): p.requires_grad
    # = flag`): (the class, qualified; the line; the attributes it walks): it unfreezes only what
    # those hold
    unfreezes_parts: tuple[tuple[str, int, tuple[str, ...]], ...] = ()

    def to_json(self) -> list[Any]:
        classes = {name: facts.to_json() for name, facts in self.classes.items()}
        return [
            classes, self.unfrozen, self.unfreezes_any, self.unfreeze_words, self.meta_init, self.default_device,
            self.resumes_optimizer, self.functions, self.complex_functions, self.imports, self.pickles, self.reaches,
            self.device_context_calls, self.exports, self.set_outside, self.unfreezes_held, self.class_mentions,
            self.recasts_held, self.set_outside_plain, self.old_torch, self.optimizer_builds, self.optimizer_builders,
            self.constructions, self.only_built, self.unfreeze_filters, self.unfreezes_parts,
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> "FileFacts":
        (classes, unfrozen, unfreezes_any, words, meta_init, default_device, resumes_optimizer, functions,
         complex_functions, imports, pickles, reaches, device_calls, exports, set_outside, unfreezes_held, mentions, recasts,
         set_plain, old_torch, builds, builders, calls, only, filters, parts) = data
        return cls(
            {name: ClassFacts.from_json(value) for name, value in classes.items()},
            tuple(unfrozen), unfreezes_any, tuple(words), meta_init, default_device, resumes_optimizer,
            tuple(functions), tuple(complex_functions), tuple(imports), pickles, tuple(reaches),
            tuple((name, line) for name, line in device_calls), None if exports is None else tuple(exports),
            tuple((name, line) for name, line in set_outside),
            tuple((name, line) for name, line in unfreezes_held),
            tuple((name, total, throwaway) for name, total, throwaway in mentions),
            tuple((holder, attr, held, line) for holder, attr, held, line in recasts),
            tuple((name, line) for name, line in set_plain),
            old_torch,
            tuple((name, line, filtered) for name, line, filtered in builds),
            tuple(builders),
            tuple((name, target, tuple(given)) for name, target, given in calls),
            tuple(only),
            tuple(filters),
            tuple((name, line, tuple(attrs)) for name, line, attrs in parts),
        )


def may_hold_facts(source: bytes) -> bool:
    """Whether a file without classes or imports may still hold a project fact (a script that
    unfreezes parameters or builds on the meta device)."""
    words = (b"requires_grad", b"make_trainable", b"set_default_", *_META_WORDS, *_RESUME_WORDS, *_PICKLE_WORDS, *_PIN_WORDS)
    return any(word in source for word in words)


def file_facts(tree: ast.Module, module: str, source: bytes, package: bool = False) -> FileFacts:
    """The facts of one parsed file (`module`: its dotted name; `package`: an `__init__.py`)."""
    facts = FileFacts()
    walks = _buffer_walk_lines(source)
    for node in _top_level_classes(tree.body):
        facts.classes[f"{module}.{node.name}"] = class_facts(node, walks)
    facts.unfrozen, facts.unfreezes_any, held_loops = _unfreezing(tree, source, module)
    if not is_test_module(module):
        facts.unfreezes_held = tuple((name, line) for name, line, parts in held_loops if not parts)
        facts.unfreezes_parts = tuple(entry for entry in held_loops if entry[2])
    if b"requires_grad_(" in source and not is_test_module(module):
        read = {line for _, line, _ in held_loops}  # `self.enc.requires_grad_()`: only `enc`, read above
        facts.unfreezes_held += tuple(entry for entry in _holder_unfreezing(tree, module) if entry[1] not in read)
    if any(word in source for word in holder_casts.WORDS) and not is_test_module(module):
        facts.recasts_held = holder_casts.holder_recasts(_top_level_classes(tree.body), module)
    if is_test_module(module):
        facts.unfreezes_any = None  # a test turning requires_grad on for the models it builds says nothing of training
    elif facts.unfreezes_any is not None:
        facts.unfreeze_words = _string_constants(tree)
        facts.unfreeze_filters = _name_filters(tree)
    else:  # a test or benchmark may build one tensor on meta or set a device for itself
        if any(word in source for word in _META_WORDS):  # `in` on bytes is a fast scan; the pattern is not
            facts.meta_init = _first_meta_init(source)
        if b"set_default_" in source:
            facts.default_device = _first_line(_DEFAULT_DEVICE, source)
    if any(word in source for word in _RESUME_WORDS):  # a test that resumes shows users resume too
        facts.resumes_optimizer = _first_line(_OPTIMIZER_RESUME, source, tree)
    if b"ptim" in source and not is_test_module(module):
        facts.optimizer_builds, facts.optimizer_builders = optimizer_builds(tree, source)
    if any(word in source for word in _PICKLE_WORDS):
        facts.pickles = _first_line(_PICKLES, source)
    if b"device" in source and _DEVICE_CONTEXT.search(source) is not None:
        facts.device_context_calls = _device_context_calls(tree)
    facts.functions = tuple(
        f"{module}.{node.name}" for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    if b"__all__" in source:
        facts.exports = _exports(tree)
    facts.set_outside, facts.set_outside_plain = _set_from_outside(source, _instance_names(tree))
    facts.class_mentions, mentions = _class_mentions(tree, source, is_test_module(module), package)
    facts.constructions = constructions(tree, source, module if package else module.rpartition(".")[0])
    facts.only_built = only_built(tree, facts.constructions, mentions)
    if any(word in source for word in _PIN_WORDS):
        facts.old_torch = _first_line(_OLD_TORCH, source)
    if facts.functions:  # only top-level functions are looked up across files
        facts.complex_functions = tuple(f"{module}.{name}" for name in _complex_functions(tree, source))
    return facts


# Capitalised words (class names as code spells them), and the spots where one only reads a
# class: its header, `super(Cls, self)`, `isinstance(x, Cls)` (a tuple of classes is not read).
_CAPITALISED = re.compile(rb"\b[A-Z]\w*")
_SUPER_OR_TEST = re.compile(rb"\b(?:super\([ \t]*([A-Z]\w*)[ \t]*,|(?:isinstance|issubclass)\([^,()\n]+,[ \t]*([A-Z]\w*)[ \t]*\))")


def _class_mentions(tree: ast.Module, source: bytes, test: bool = False, package: bool = False) -> tuple[tuple[tuple[str, int, int], ...], Counter[bytes]]:
    """How often the file's text spells each capitalised word (comments and strings too, so a
    registry that names a class in a string counts), leaving out a class's header, `super(Cls,
    self)`, `isinstance(x, Cls)`, top-level imports and docstrings; and how many of those build
    an instance that is used for calls and dropped (FileFacts.class_mentions); in a test file
    (`test`), those builds are left out of both counts. Counting the text is cheap and errs one way: a mention it cannot
    place only keeps a class from counting as throwaway. Returned with the counts before a test's
    builds are left out."""
    total = Counter(_CAPITALISED.findall(source))
    if b"super(" in source or b"instance(" in source or b"subclass(" in source:
        for match in _SUPER_OR_TEST.finditer(source):
            total[match.group(1) or match.group(2)] -= 1
    _uncount(total, _declared_words(tree, package))
    docstring_rows = set(_docstring_lines(tree))
    for node in _docstrings(tree):
        _uncount(total, _CAPITALISED.findall(str(node.value).encode("utf-8", "surrogatepass")))
    _uncount(total, _compared_names(source))
    if b"#" in source:
        for row, comment in _comments(source):
            if row not in docstring_rows:  # (its words were taken out with the docstring's)
                _uncount(total, _CAPITALISED.findall(comment))
    throwaway = _throwaway_builds(tree, source, docstring_rows)
    counted = total.copy() if test else total
    if test:
        # A test that builds a class for one call shows nothing of how users keep it (a
        # library's penalty term is built only by its test): such builds count neither way.
        for name, count in throwaway.items():
            counted[name.encode("ascii")] -= count
        throwaway = {}
    mentions = ((word.decode("ascii"), count) for word, count in counted.items() if count > 0)
    return tuple(sorted((word, count, throwaway.get(word, 0)) for word, count in mentions)), total


def _uncount(total: Counter[bytes], words: Iterable[bytes]) -> None:
    """Take one mention of each word off `total`, never below zero: spots that name no build."""
    for word in words:
        if total.get(word, 0) > 0:
            total[word] -= 1


# A class's name as a string compared with a setting (`args.model == "TGAT"`, `in ["TGAT",
# "TGN"]`, `choices=[...]`) picks which call runs; it builds nothing (a registry's
# `dict(type="ResNet")` stays a mention).
_COMPARED_NAME = re.compile(rb"""[=!]=[ \t]*['"]([A-Z]\w*)['"]|['"]([A-Z]\w*)['"][ \t]*[=!]=""")
_MEMBERSHIP = re.compile(rb"(?:\bin|\bchoices[ \t]*=)[ \t]*[\[(]([^\]\)\n]*)[\])]")
_QUOTED_NAME = re.compile(rb"""['"]([A-Z]\w*)['"]""")


def _compared_names(source: bytes) -> Iterator[bytes]:
    """The class names the text spells as strings compared with a setting (see `_COMPARED_NAME`)."""
    if b"==" in source or b"!=" in source:
        for match in _COMPARED_NAME.finditer(source):
            yield match.group(1) or match.group(2)
    if b"in " in source or b"choices" in source:
        for match in _MEMBERSHIP.finditer(source):
            yield from _QUOTED_NAME.findall(match.group(1))


# A `#` with no quote before it on its line starts a comment (or sits on a line inside a
# multi-line string: a word there is then not counted, which can only keep a finding).
_COMMENT = re.compile(rb"^[^'\"#\n]*#([^\n]*)", re.MULTILINE)


def _comments(source: bytes) -> Iterator[tuple[int, bytes]]:
    """The text of each comment that starts a line's first `#`, with its line number: a class
    named in a comment (`# -1e10, following TGAT`) is not handed around."""
    row, counted_to = 1, 0
    for match in _COMMENT.finditer(source):
        row += source.count(b"\n", counted_to, match.start())
        counted_to = match.start()
        yield row, match.group(1)


def _declared_words(tree: ast.Module, package: bool = False) -> Iterator[bytes]:
    """The capitalised words of top-level imports (the module path, the names, their aliases) and
    the names in the headers of top-level classes and of classes nested in them: spots that name
    a class without building it. Not a name imported under another (`Blur as Smoother`: what is
    built as `Smoother` is that class), nor what a package's `__init__` imports: a re-export is
    the library's public API, which its users build and keep."""
    for node in top_level(tree.body):
        if isinstance(node, ast.ImportFrom):
            names = [] if package else [word for alias in node.names for word in _spelled_import(alias)]
            words = [*(node.module or "").split("."), *names]
        elif isinstance(node, ast.Import):
            words = [w for a in node.names for w in (*a.name.split("."), a.asname or "")]
        elif isinstance(node, ast.ClassDef):
            words = [node.name, *(n.name for n in node.body if isinstance(n, ast.ClassDef))]
        else:
            continue
        yield from (w.encode("ascii") for w in words if w[:1].isupper() and w.isascii())


def _spelled_import(alias: ast.alias) -> list[str]:
    """The words an imported name spells on its line that name no build: `Cls`, and `Cls as Cls`
    twice; of `Blur as Smoother` only `Smoother` (the class stays mentioned as `Blur`)."""
    if alias.asname is None:
        return [alias.name]
    if alias.asname == alias.name:
        return [alias.name, alias.asname]
    return [alias.asname]


def _docstrings(tree: ast.Module) -> Iterator[ast.Constant]:
    """The docstrings of the module, its top-level classes and functions, and their methods: prose
    that names a class (`The SequencePoolingLayer is used to ...`) builds nothing."""
    owners: list[ast.AST] = [tree]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            owners.append(node)
            if isinstance(node, ast.ClassDef):
                owners.extend(n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    for owner in owners:
        body = getattr(owner, "body", [])
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            yield first.value


def _throwaway_classes(files: Iterable[FileFacts]) -> frozenset[str]:
    """The class names every mention of which, in every file of the run, builds a throwaway
    instance (FileFacts.class_mentions summed over the run)."""
    mentions: Counter[str] = Counter()
    builds: Counter[str] = Counter()
    for facts in files:
        for name, total, built in facts.class_mentions:
            mentions[name] += total
            builds[name] += built
    return frozenset(name for name, built in builds.items() if built and built == mentions[name])


def _throwaway_builds(tree: ast.Module, source: bytes, docstrings: set[int]) -> dict[str, int]:
    """How many times each capitalised name is called, by its bare name, to build an instance
    that is only called and dropped: `Cls(...)(x)` on one line, or `n = Cls(...)` in a function
    whose text names `n` only in such assignments and in calls `n(...)` (a parameter, a loop, a
    method call, a comment naming it: not throwaway). Read from the code's lines (not comments,
    not the docstring lines in `docstrings`): what it cannot place is simply not counted, which
    keeps the class's findings."""
    lines: Optional[list[bytes]] = None
    spans: Optional[list[tuple[int, int]]] = None
    texts: dict[tuple[int, int], bytes] = {}  # each function's text, joined once
    found: dict[str, int] = {}
    candidates = list(_candidate_lines(source))
    rows = [row for row, _ in candidates]
    for row, line in candidates:
        if row in docstrings:
            continue
        code = line.split(b"#", 1)[0]
        names = list(_called_at_once(code)) if b")(" in code else []
        build = _LOCAL_BUILD.match(code) if b"=" in code else None
        if build is not None and not _call_ends_line(code, build.end() - 1):
            build = None  # `n = Cls(...).cuda()`: the instance is moved, not only called
        if build is not None:
            spans = spans if spans is not None else sorted(_function_spans(tree.body, rows), key=lambda sp: sp[1] - sp[0])
            lines = lines if lines is not None else source.split(b"\n")
            span = next((sp for sp in spans if sp[0] < row <= sp[1]), None)
            if span is not None and span not in texts:
                texts[span] = b"\n".join(lines[span[0] - 1 : span[1]])
            if span is not None and _only_called(texts[span], build.group(1)):
                names.append(build.group(2).decode("ascii"))
        for name in names:
            found[name] = found.get(name, 0) + 1
    return found


def _call_ends_line(code: bytes, opened: int) -> bool:
    """The parenthesis at `opened` closes on this line and nothing but blanks follows it."""
    depth = 0
    for at in range(opened, len(code)):
        depth += (code[at] == 0x28) - (code[at] == 0x29)
        if depth == 0:
            return not code[at + 1 :].strip()
    return False


def _candidate_lines(source: bytes) -> Iterator[tuple[int, bytes]]:
    """The lines (number, text) that hold `)(` or start `n = Cls(`, in order, each once."""
    offsets = sorted({m.start() for m in _MAY_BUILD.finditer(source)} | {m.start() for m in _CALLED_AGAIN.finditer(source)}) if b"(" in source else []
    row, at, last = 1, 0, 0
    for offset in offsets:
        row += source.count(b"\n", at, offset)
        at = offset
        if row == last:
            continue
        last = row
        start = source.rfind(b"\n", 0, offset) + 1
        end = source.find(b"\n", offset)
        yield row, source[start : end if end != -1 else len(source)]


_CALLED_AGAIN = re.compile(rb"\)\(")
# `    n = Cls(`: a local bound to a class built by its bare name (`==` is no assignment)
_LOCAL_BUILD = re.compile(rb"[ \t]+(\w+)[ \t]*=[ \t]*([A-Z]\w*)\(")
_MAY_BUILD = re.compile(rb"=[ \t]*[A-Z]\w*\(")  # a literal first: a fast scan; the line is read after
_BARE_CALL = re.compile(rb"(?<![\w.])([A-Z]\w*)\(")


def _only_called(text: bytes, local: bytes) -> bool:
    """Every mention of `local` in the function's text is a call of it, or a plain assignment of
    a bare class call to it (stops at the first other mention)."""
    calls = 0
    for match in re.finditer(rb"(?<![\w.])" + re.escape(local) + rb"\b[ \t]*(\(|=[ \t]*[A-Z]\w*\(|=(?!=))?", text):
        follow = match.group(1)
        if follow is None or follow == b"=":
            return False
        if follow == b"(":
            calls += 1
        elif text[text.rfind(b"\n", 0, match.start()) + 1 : match.start()].strip():
            return False  # `x, n = Cls(...)` or `f(n = Cls(...))`: not a plain assignment
    return calls > 0


def _called_at_once(line: bytes) -> Iterator[str]:
    """The bare class names on `line` whose call is called again at once: `Cls(a, f(b))(x)`.
    One pass with a stack of open parentheses (each remembers the class name it opens, if any)."""
    names = {m.end() - 1: m.group(1) for m in _BARE_CALL.finditer(line)}
    stack: list[Optional[bytes]] = []
    for at, byte in enumerate(line):
        if byte == 0x28:
            stack.append(names.get(at))
        elif byte == 0x29 and stack:
            name = stack.pop()
            if name is not None and line[at + 1 : at + 2] == b"(":
                yield name.decode("ascii")


def _function_spans(body: list[ast.stmt], rows: list[int]) -> Iterator[tuple[int, int]]:
    """First and last line of every function (methods and nested ones too) holding one of `rows`;
    statements that hold none are not entered."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        first: int = getattr(node, "lineno", 0)
        last: int = getattr(node, "end_lineno", None) or first
        at = bisect.bisect_left(rows, first)
        if at == len(rows) or rows[at] > last:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield first, last
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(child for child in getattr(node, field_name, ()) if isinstance(child, (ast.stmt, ast.excepthandler)))


# A requirement string pinning torch below 1.6 (`"torch==1.4.0"`, `'torch<1.6'`, `"torch<=1.5.1"`):
# before 1.6, `register_buffer(..., persistent=False)` raises TypeError. A quote right after a
# backtick or a letter opens no string: prose quoting a pin (``"torch==1.4.0"`` in a docstring) pins nothing.
_PIN_WORDS = (b"'torch", b'"torch')
_OLD_TORCH = re.compile(rb"""(?<![`\w])["']torch\s*(?:==\s*(?:0\.|1\.[0-5](?![0-9]))|<=\s*(?:0\.|1\.[0-5](?![0-9]))|<\s*(?:0\.|1\.[0-6](?![0-9])))""")


def _set_from_outside(source: bytes, selves: frozenset[bytes] = frozenset()) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
    """Attribute names the file sets on objects other than `self`/`cls` (or another name the file's
    methods give their instance: `def __init__(this, n)`), each with its first line; not on an
    object of settings (`args.eos = 2`, `self.cfg.eos = 2`), which is no module, nor on a torch
    layer the file builds into a name (`proj = nn.Conv2d(...)`, then `proj.weight = ...`), which is
    none of the project's classes. Two lists: values that may be a Parameter, and plain Python
    values (a list, a number), which a buffer refuses."""
    first: dict[str, int] = {}
    plain: dict[str, int] = {}
    layers: Optional[frozenset[bytes]] = None
    for match in _SET_FROM_OUTSIDE.finditer(source):
        holder = match.group(1)
        if holder in (b"self", b"cls") or holder in selves or holder.rsplit(b".", 1)[-1] in _SETTINGS_OBJECTS:
            continue
        if layers is None:
            layers = _torch_layer_names(source)
        if holder in layers:
            continue
        end = source.find(b"\n", match.end())
        value = source[match.end(): end if end >= 0 else len(source)]
        name = match.group(2).decode("ascii")
        if _PLAIN_VALUE.match(value) is not None:
            plain.setdefault(name, _line_of(source, match.start(2)))
        elif not _never_a_parameter(value):
            first.setdefault(name, _line_of(source, match.start(2)))
    return tuple(first.items()), tuple(plain.items())


# `nn.Conv2d(` (or `torch.nn.`): a torch layer built; and a name bound to one at a line's start
_LAYER_VALUE = re.compile(rb"(?:torch\.)?nn\.[A-Z]\w*\(")
_LAYER_BINDING = re.compile(rb"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*" + _LAYER_VALUE.pattern)


def _torch_layer_names(source: bytes) -> frozenset[bytes]:
    """Names every binding of which in the file (`name = ...` at a line's start) builds a torch layer."""
    layers: set[bytes] = set()
    for name in set(_LAYER_BINDING.findall(source)):
        values = re.findall(rb"(?m)^[ \t]*" + re.escape(name) + rb"[ \t]*=(?!=)[ \t]*(.*)", source)
        if all(_LAYER_VALUE.match(value) for value in values):
            layers.add(name)
    return frozenset(layers)


# Values that are never an nn.Parameter: a torch factory (not torch.nn's), numpy, a literal, None,
# arithmetic (`box.aabb = box.aabb * scale`). Assigning one to a Parameter's name raises TypeError
# (None only empties it), so such a line sets another object's attribute, or nothing a buffer minds.
_NOT_A_PARAMETER = re.compile(rb"[ \t]*(?:torch\.(?!nn\.)|np\.|numpy\.|[\[({'\"0-9-]|(?:True|False|None)\b)")
_ARITHMETIC = re.compile(rb"\s[-+*/@]\s")
# Plain Python values: a list, tuple or dict display, a number, a string, a bool, a builtin's result.
_PLAIN_VALUE = re.compile(rb"[ \t]*(?:[\[({'\"0-9]|-[0-9]|(?:True|False)\b|(?:list|tuple|dict|int|float|str|len)\()")


def _never_a_parameter(value: bytes) -> bool:
    if b"Parameter(" in value:  # `nn.Parameter(stats.mean * 255)`, `None if c else nn.Parameter(w)`
        return False
    return _NOT_A_PARAMETER.match(value) is not None or _ARITHMETIC.search(value) is not None


def _instance_names(tree: ast.Module) -> frozenset[bytes]:
    """The names other than `self` that methods of the file's top-level classes give their first
    parameter (`this`)."""
    names: set[bytes] = set()
    for node in _top_level_classes(tree.body):
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.args.args:
                if not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list):
                    names.add(method.args.args[0].arg.encode("ascii", "replace"))
    return frozenset(names - {b"self", b"cls"})


def _device_context_calls(tree: ast.Module) -> tuple[tuple[str, int], ...]:
    """Methods called on an object in statements under `with torch.device(...)` (or a context
    named for a device, `with self._device:`): gpt-fast's `with torch.device(device):
    model.setup_caches(...)` builds what that method makes directly on the device."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.With, ast.AsyncWith)) or not any(_is_device_context(i.context_expr) for i in node.items):
            continue
        for stmt in _statements(node.body):
            value = getattr(stmt, "value", None)
            if type(stmt) in (ast.Expr, ast.Assign) and type(value) is ast.Call and type(value.func) is ast.Attribute:  # type: ignore[attr-defined]
                found.setdefault(value.func.attr, stmt.lineno)  # type: ignore[attr-defined]
    return tuple(sorted(found.items()))


def _is_device_context(expr: ast.expr) -> bool:
    if type(expr) is ast.Call:
        func = expr.func  # type: ignore[attr-defined]
        return type(func) is ast.Attribute and func.attr == "device" and _is_name(func.value, "torch")
    name = expr.id if type(expr) is ast.Name else expr.attr if type(expr) is ast.Attribute else ""  # type: ignore[attr-defined]
    return "device" in name.lower()


def _exports(tree: ast.Module) -> Optional[tuple[str, ...]]:
    """The names of a literal `__all__ = [...]` bound once at the top level; None when there is
    none, or when it is built or extended in a way not spelled out (then `*` may take anything)."""
    found: Optional[tuple[str, ...]] = None
    for node in top_level(tree.body):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = getattr(node, "value", None)
        names = [_literal(e) for e in value.elts] if isinstance(node, ast.Assign) and isinstance(value, (ast.List, ast.Tuple)) else [None]
        if found is not None or any(n is None for n in names):
            return None
        found = tuple(n for n in names if n is not None)
    return found


def top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, including those under `if`/`try` (optional imports, version checks)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from top_level(node.body)
            yield from top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from top_level(block)


def _top_level_classes(body: list[ast.stmt]) -> Iterator[ast.ClassDef]:
    return (node for node in top_level(body) if isinstance(node, ast.ClassDef))


# -- one class --------------------------------------------------------------------------------------
class _ClassReader:
    def __init__(self, name_lists: dict[str, tuple[str, ...]]) -> None:
        self.binds: set[str] = set()
        self.registered: set[str] = set()
        self.self_calls: set[str] = set()
        self.holds: set[str] = set()
        self.held_as: set[str] = set()
        self.dynamic = False
        self.stateful = False
        self.registers_unnamed = False
        self.registers_via: set[str] = set()
        self._method: tuple[str, frozenset[str]] = ("", frozenset())  # the method read now, its parameters
        self.name_lists = name_lists  # class attributes that are literal lists of strings
        self.loop_names: dict[str, tuple[str, ...]] = {}  # loop variables over such lists

    def method(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        me = _self_name(func)
        if me is None:
            return
        params = frozenset(a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs))
        self._method = (func.name, params - {me})
        for stmt in _statements(func.body):
            kind = type(stmt)
            if kind is ast.Assign:
                for target in stmt.targets:  # type: ignore[attr-defined]
                    self._target(target, me)
                    if type(stmt.value) is ast.Call and type(target) is ast.Attribute and _is_name(target.value, me):  # type: ignore[attr-defined]
                        self._held(stmt.value, into=target.attr)  # type: ignore[attr-defined]
                self._value(stmt.value, me)  # type: ignore[attr-defined]
            elif kind is ast.AnnAssign or kind is ast.AugAssign:
                self._target(stmt.target, me)  # type: ignore[attr-defined]
                if stmt.value is not None:  # type: ignore[attr-defined]
                    self._value(stmt.value, me)  # type: ignore[attr-defined]
            elif kind is ast.For or kind is ast.AsyncFor:
                self._target(stmt.target, me)  # type: ignore[attr-defined]
                self._loop(stmt, me)  # type: ignore[arg-type]
            elif kind is ast.With or kind is ast.AsyncWith:
                for item in stmt.items:  # type: ignore[attr-defined]
                    if item.optional_vars is not None:
                        self._target(item.optional_vars, me)
            elif kind is ast.Expr or kind is ast.Return:
                if stmt.value is not None:  # type: ignore[attr-defined]
                    self._value(stmt.value, me)  # type: ignore[attr-defined]

    def _held(self, value: ast.expr, depth: int = 0, into: Optional[str] = None) -> None:
        """Classes called in a value stored on self: `PE(...)`, and what a container module is
        given (`nn.Sequential(PE(...))`, `nn.ModuleList([Block() for _ in range(n)])`); `into`:
        the attribute a class called there at the top is stored in (`held_as`)."""
        kind = type(value)
        if kind is ast.Call:
            name = called_name(value.func)  # type: ignore[attr-defined]
            if name is not None and name.lstrip("_")[:1].isupper():  # `_ProposalLayer(...)` too
                self.holds.add(name)
                if into is not None:
                    self.held_as.add(f"{name}:{into}")
            if depth < 3:
                for arg in value.args:  # type: ignore[attr-defined]
                    self._held(arg, depth + 1)
                for keyword in value.keywords:  # type: ignore[attr-defined]
                    self._held(keyword.value, depth + 1)
        elif kind is ast.List or kind is ast.Tuple:
            for element in value.elts:  # type: ignore[attr-defined]
                self._held(element, depth)
        elif kind is ast.ListComp or kind is ast.GeneratorExp:
            self._held(value.elt, depth)  # type: ignore[attr-defined]
        elif kind is ast.Starred:
            self._held(value.value, depth)  # type: ignore[attr-defined]

    def _loop(self, loop: ast.For | ast.AsyncFor, me: str) -> None:
        """`for key in self._buffer_names:` over a literal list: the names a registration in the
        loop may take (statements come in source order, so the loop precedes its body)."""
        if type(loop.target) is not ast.Name:
            return
        names = _literal_names(loop.iter, me, self.name_lists)
        if names is not None:
            self.loop_names[loop.target.id] = names  # type: ignore[attr-defined]

    def _target(self, target: ast.expr, me: str) -> None:
        kind = type(target)
        if kind is ast.Attribute and _is_name(target.value, me):  # type: ignore[attr-defined]
            self.binds.add(target.attr)  # type: ignore[attr-defined]
        elif kind is ast.Tuple or kind is ast.List:
            for element in target.elts:  # type: ignore[attr-defined]
                self._target(element, me)
        elif kind is ast.Starred:
            self._target(target.value, me)  # type: ignore[attr-defined]
        elif kind is ast.Subscript and _is_attr_of(target.value, me, "__dict__"):  # type: ignore[attr-defined]
            self.dynamic = True

    def _value(self, value: ast.expr, me: str) -> None:
        if type(value) is not ast.Call:
            return
        func = value.func  # type: ignore[attr-defined]
        args = value.args  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and _is_name(func.value, me):
            name = func.attr
            if name in ("register_buffer", "register_parameter", "add_module", "register_module"):
                self.stateful = True
                literal = _literal(args[0]) if args else None
                looped = self.loop_names.get(args[0].id) if args and type(args[0]) is ast.Name else None  # type: ignore[attr-defined]
                if looped is not None and name.startswith("register_"):
                    self.registered.update(looped)
                elif literal is None and name == "register_buffer" and args and type(args[0]) is ast.Name and args[0].id in self._method[1]:  # type: ignore[attr-defined]
                    self.dynamic = True
                    self.registers_via.add(self._method[0])  # registers the name its caller gives
                elif literal is None:
                    self.dynamic = True
                    self.registers_unnamed = self.registers_unnamed or name == "register_buffer"
                elif name.startswith("register_"):
                    self.registered.add(literal)
                else:
                    self.binds.add(literal)
            else:
                self.self_calls.add(name)
        elif type(func) is ast.Attribute and func.attr == "update" and _is_attr_of(func.value, me, "__dict__"):
            self.dynamic = True
        elif type(func) is ast.Name and func.id in ("setattr", "object.__setattr__") or _is_object_setattr(func):
            if len(args) >= 2 and _is_name(args[0], me):
                literal = _literal(args[1])
                if literal is None:
                    self.dynamic = True
                else:
                    self.binds.add(literal)
        elif type(func) is ast.Name and func.id == "vars" and args and _is_name(args[0], me):
            self.dynamic = True


# folders whose files are tests or benchmarks
TEST_FOLDERS = frozenset(("test", "tests", "testing", "benchmark", "benchmarks"))


def is_test_module(module: str) -> bool:
    """A test or a benchmark: code that exercises the library on a machine of its choosing."""
    parts = module.split(".")
    last = parts[-1]
    return (
        any(p in TEST_FOLDERS for p in parts)
        or last.startswith(("test_", "benchmark_", "bench_")) or last.endswith(("_test", "_benchmark")) or last == "conftest"
    )


_EXPORT_FORMATS = ("onnx", "ncnn")


def export_variant(module: str) -> Optional[str]:
    """The export format a file is written for, when its name or a folder says so
    (`t2s_model_onnx.py`, `export-onnx.py`, `zipformer_for_ncnn_export_only.py`, `onnx/`).
    Such modules are rewritten for a format's tracer: built, traced where they were built (on
    the CPU as a rule) and never moved; the exported graph, not the module, is what runs."""
    for part in module.split("."):
        words = re.split(r"[^a-z0-9]+", part.lower())
        found = next((w for w in _EXPORT_FORMATS if w in words), None)
        if found is not None:
            return found
    return None


def _literal_names(node: ast.expr, me: str, name_lists: dict[str, tuple[str, ...]]) -> Optional[tuple[str, ...]]:
    """The strings of a literal list or tuple, written out or held by a class attribute
    (`self._names`, `_names`)."""
    if type(node) is ast.List or type(node) is ast.Tuple:
        names = [_literal(e) for e in node.elts]  # type: ignore[attr-defined]
        return tuple(n for n in names if n is not None) if all(n is not None for n in names) else None
    if type(node) is ast.Attribute and _is_name(node.value, me):  # type: ignore[attr-defined]
        return name_lists.get(node.attr)  # type: ignore[attr-defined]
    if type(node) is ast.Name:
        return name_lists.get(node.id)  # type: ignore[attr-defined]
    return None


def _class_name_lists(node: ast.ClassDef) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for stmt in node.body:
        if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Name:  # type: ignore[attr-defined]
            names = _literal_names(stmt.value, "", {})  # type: ignore[attr-defined]
            if names is not None:
                found[stmt.targets[0].id] = names  # type: ignore[attr-defined]
    return found


def class_facts(node: ast.ClassDef, buffer_walks: dict[int, str]) -> ClassFacts:
    """`buffer_walks`: the lines of the file that read `<name>.named_buffers(`, `.buffers(` or
    `._buffers`, and the name (`_buffer_walk_lines`)."""
    reader = _ClassReader(_class_name_lists(node))
    walks = _walks_buffers(node, buffer_walks)
    body: set[str] = set()
    moved: set[str] = set()
    held: set[str] = set()
    moves_all = False
    for stmt in node.body:
        kind = type(stmt)
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            body.add(stmt.name)  # type: ignore[attr-defined]
            reader.method(stmt)  # type: ignore[arg-type]
            if stmt.name in MOVE_METHODS:  # type: ignore[attr-defined]
                names, generic = _what_it_moves(stmt)  # type: ignore[arg-type]
                moved |= names
                held |= _held_attrs_moved(stmt)  # type: ignore[arg-type]
                moves_all = moves_all or generic
            if stmt.name == "__init__" and _creates_state(stmt):  # type: ignore[attr-defined,arg-type]
                reader.stateful = True
        elif kind is ast.Assign:
            body.update(t.id for t in stmt.targets if type(t) is ast.Name)  # type: ignore[attr-defined]
        elif kind is ast.AnnAssign and type(stmt.target) is ast.Name:  # type: ignore[attr-defined]
            body.add(stmt.target.id)  # type: ignore[attr-defined]
        elif kind is ast.ClassDef:
            body.add(stmt.name)  # type: ignore[attr-defined]
    return ClassFacts(
        tuple(sorted(reader.binds)), tuple(sorted(reader.registered)), tuple(sorted(body)),
        tuple(sorted(reader.self_calls)), reader.dynamic, reader.stateful, tuple(sorted(moved)), moves_all,
        tuple(sorted(reader.holds)), reader.registers_unnamed, walks, tuple(sorted(held)), tuple(sorted(reader.registers_via)),
        tuple(sorted(reader.held_as)),
    )


BUFFER_WALKS = frozenset(("named_buffers", "buffers", "_buffers"))


_BUFFER_WALK = re.compile(rb"\b(\w+)\s*\.\s*(?:named_buffers|buffers)\s*\(|\b(\w+)\s*\.\s*_buffers\b")


def _buffer_walk_lines(source: bytes) -> dict[int, str]:
    if b"buffers" not in source:  # `in` on bytes is a fast scan; the pattern is not
        return {}
    found: dict[int, str] = {}
    line, counted = 1, 0
    for match in _BUFFER_WALK.finditer(source):  # lines counted onward from the last match, not from 0
        line += source.count(b"\n", counted, match.start())
        counted = match.start()
        found[line] = (match.group(1) or match.group(2)).decode()
    return found


def _walks_buffers(node: ast.ClassDef, lines: dict[int, str]) -> Optional[str]:
    """The first method that reads its own buffers wholesale (`self.named_buffers()`,
    `self._buffers`): it would treat a new buffer like the others (slice it, copy it)."""
    for stmt in node.body:
        if type(stmt) is ast.FunctionDef or type(stmt) is ast.AsyncFunctionDef:
            me = _self_name(stmt)  # type: ignore[arg-type]
            if me is None:
                continue
            end = stmt.end_lineno or stmt.lineno
            if any(stmt.lineno <= line <= end and name == me for line, name in lines.items()):
                return stmt.name  # type: ignore[attr-defined]
    return None


def _what_it_moves(func: ast.FunctionDef) -> tuple[set[str], bool]:
    """The self attributes and string literals a move override mentions, and whether it walks
    every attribute (`dir(self)`, `vars(self)`, `self.__dict__`)."""
    me = _self_name(func)
    names: set[str] = set()
    generic = False
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and _is_name(node.value, me or ""):
            names.add(node.attr)
            generic = generic or node.attr == "__dict__"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
        elif isinstance(node, ast.Name) and node.id in ("dir", "vars"):
            generic = True
    return names, generic


def _held_attrs_moved(func: ast.FunctionDef) -> set[str]:
    """Attributes a move override assigns on an object other than itself: the tensors of a held
    module that it moves along (`self.detect.stride = fn(self.detect.stride)`, `m.grid = ...`)."""
    me = _self_name(func) or ""
    found: set[str] = set()
    for stmt in _statements(func.body):
        if type(stmt) is ast.Assign:
            for target in stmt.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Attribute and not _is_name(target.value, me):  # type: ignore[attr-defined]
                    found.add(target.attr)  # type: ignore[attr-defined]
    return found


def _creates_state(init: ast.FunctionDef) -> bool:
    """`__init__` stores the result of calling a class (a layer, `nn.Parameter`) on self."""
    me = _self_name(init)
    for stmt in _statements(init.body):
        if type(stmt) is ast.Assign and type(stmt.value) is ast.Call:  # type: ignore[attr-defined]
            if any(type(t) is ast.Attribute and _is_name(t.value, me or "") for t in stmt.targets):  # type: ignore[attr-defined]
                name = called_name(stmt.value.func)  # type: ignore[attr-defined]
                if name is not None and name[:1].isupper():
                    return True
    return False


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a function body, nested blocks included, nested scopes skipped."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        kind = type(stmt)
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef:
            continue
        yield stmt
        children: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if type(block) is list:
                children.extend(block)
        for handler in getattr(stmt, "handlers", ()):
            children.extend(handler.body)
        for case in getattr(stmt, "cases", ()):
            children.extend(case.body)
        stack.extend(reversed(children))


def _self_name(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Optional[str]:
    for decorator in func.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod"):
            return None
    params = func.args.posonlyargs or func.args.args
    return params[0].arg if params else None


def _is_name(node: ast.expr, name: str) -> bool:
    return type(node) is ast.Name and node.id == name  # type: ignore[attr-defined]


def _is_attr_of(node: ast.expr, me: str, attr: str) -> bool:
    return type(node) is ast.Attribute and node.attr == attr and _is_name(node.value, me)  # type: ignore[attr-defined]


def _is_object_setattr(func: ast.expr) -> bool:
    return type(func) is ast.Attribute and func.attr == "__setattr__"  # type: ignore[attr-defined]


def _literal(node: ast.expr) -> Optional[str]:
    return node.value if type(node) is ast.Constant and isinstance(node.value, str) else None  # type: ignore[attr-defined]


# -- the file's text ----------------------------------------------------------------------------------
def _unfreezing(tree: ast.Module, source: bytes, module: str) -> tuple[tuple[str, ...], Optional[int], tuple[tuple[str, int, tuple[str, ...]], ...]]:
    """Names whose `requires_grad` is turned on (`<x>.<name>.requires_grad = True`), the line of
    the first unfreezing that names no parameter (a loop over `parameters()` setting it,
    `requires_grad_()` on a module or on an attribute, Lightning's `make_trainable`), and the
    unfreezing loops of a class's methods over what the instance holds (`for b in [self.enc1,
    self.enc2]: for p in b.parameters(): p.requires_grad = flag`), by class, line and the
    attributes they walk (none: the whole instance): those reach only the modules held there. Turning it off (`= False`, `requires_grad_(False)`) is not
    unfreezing, nor is marking a fresh tensor (`x.detach().requires_grad_()`, a name the file
    binds to one) or setting `self.requires_grad`."""
    if b".requires_grad" not in source and b"make_trainable(" not in source:
        return (), None, ()
    if _UNFREEZE_SITE.search(source) is None:
        return (), None, ()  # `requires_grad=True` given to a factory, or only read: no walk
    names: set[str] = set()
    anonymous = [_line_of(source, m.start()) for m in _UNFREEZE_HELPERS.finditer(source)]
    held: list[tuple[str, int, tuple[str, ...]]] = []
    lines = {_line_of(source, m.start()) for m in _UNFREEZE_SITE.finditer(source)}
    for node in nodes_on_lines(tree, lines):
        receiver = _turned_on(node)
        if receiver is None:
            continue
        if isinstance(receiver, ast.Attribute) and isinstance(node, ast.Assign):
            names.add(receiver.attr)  # `<x>.<name>.requires_grad = True`: that parameter
            continue
        if _names_no_parameter(receiver, partial(_fresh_here, tree, source, node)) or _only_given_false(tree, node):
            continue
        owner = _holding_class(tree, node.lineno, receiver)  # type: ignore[attr-defined]
        if owner is not None:
            held.append((f"{module}.{owner[0]}", node.lineno, owner[1]))  # type: ignore[attr-defined]
        else:
            anonymous.append(node.lineno)  # type: ignore[attr-defined]
    return tuple(sorted(names)), (min(anonymous) if anonymous else None), tuple(held)


def _holding_class(tree: ast.Module, line: int, receiver: ast.expr) -> Optional[tuple[str, tuple[str, ...]]]:
    """The top-level class whose method turns requires_grad on at `line` for `receiver`, and the
    attributes of the instance it reaches through (none: the instance itself, `self.parameters()`),
    when every value `receiver` may hold comes from the instance (`self.<attr>`, its parameters,
    loops and lists over them)."""
    for node in _top_level_classes(tree.body):
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.lineno <= line <= (method.end_lineno or line):
                me = _self_name(method)  # a static method's first parameter is no instance
                parts = None if me is None else _instance_parts(method, receiver, me, 0)
                return None if parts is None else (node.name, () if "" in parts else tuple(sorted(parts)))
    return None


def _instance_parts(func: Union[ast.FunctionDef, ast.AsyncFunctionDef], expr: ast.expr, me: str, depth: int) -> Optional[set[str]]:
    """The attributes of the instance `me` that `expr` is built from (`""`: the instance as a
    whole), when every name in it is `me` or a local of `func` bound (by assignment or as a loop
    target) only to such values; None otherwise."""
    roots = _roots(expr)
    if depth > 4 or not roots:
        return None
    parts: set[str] = set()
    for name, attr in roots:
        if name == me:
            if attr == _CALLED:
                return None  # `self.get_encoder().parameters()`: what the method returns is not read here
            parts.add("" if attr is None or attr in _WHOLE_MODULE_WALKS else attr)
            continue
        bound = _bindings(func, name)
        found = [_instance_parts(func, value, me, depth + 1) for value in bound]
        if not bound or any(part is None for part in found):
            return None
        parts.update(*found)  # type: ignore[arg-type]
    return parts


# Methods of a module that walk everything it holds.
_WHOLE_MODULE_WALKS = frozenset("parameters named_parameters modules named_modules children named_children".split())
_CALLED = "()"  # `_roots`' mark for a method called on the name itself, other than those walks


def _roots(expr: ast.expr, attr: Optional[str] = None) -> list[tuple[str, Optional[str]]]:
    """The names a value is read from, each with the attribute read from it first: `(b,
    "parameters")` of `b.parameters()`, `(self, "a")` and `(self, "b")` of `[self.a, self.b]`;
    nothing for a call of a plain function other than a builder of lists."""
    if isinstance(expr, ast.Name):
        return [(expr.id, attr)]
    if isinstance(expr, ast.Attribute):
        return _roots(expr.value, expr.attr)
    if isinstance(expr, ast.Subscript):
        return _roots(expr.value, attr)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [root for element in expr.elts for root in (_roots(element) or [("?", None)])]
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Attribute):
            method = expr.func.attr
            if isinstance(expr.func.value, ast.Name) and method not in _WHOLE_MODULE_WALKS:
                return [(expr.func.value.id, _CALLED)]
            return _roots(expr.func.value, method)
        if isinstance(expr.func, ast.Name) and expr.func.id in ("list", "tuple", "chain", "iter", "reversed") and expr.args:
            return [root for arg in expr.args for root in (_roots(arg) or [("?", None)])]
    return []


def _bindings(func: Union[ast.FunctionDef, ast.AsyncFunctionDef], name: str) -> list[ast.expr]:
    """What `func` binds `name` to: assigned values and the iterables of loops over it (none if
    it is also bound some other way: a parameter, a tuple target, a with)."""
    if any(arg.arg == name for arg in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)):
        return []
    values: list[ast.expr] = []
    stores = 0
    for node in ast.walk(func):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name) and node.target.id == name:
            values.append(node.iter)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            stores += 1
    return values if stores == len(values) else []  # also bound in a way not read here


def _holder_unfreezing(tree: ast.Module, module: str) -> tuple[tuple[str, int], ...]:
    """`self.requires_grad_(True)` or `self.<attr>.requires_grad_()` in a method of a top-level
    class: the instance turns requires_grad on for every parameter of the modules it holds."""
    found: list[tuple[str, int]] = []
    for node in _top_level_classes(tree.body):
        for method in node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
                continue
            me = method.args.args[0].arg
            for call in ast.walk(method):
                receiver = _turned_on(call) if isinstance(call, ast.Call) else None
                if isinstance(receiver, ast.Attribute):
                    receiver = receiver.value
                if isinstance(receiver, ast.Name) and receiver.id == me:
                    found.append((f"{module}.{node.name}", call.lineno))  # type: ignore[attr-defined]
                    break
    return tuple(found)


def _name_filters(tree: ast.Module) -> tuple[str, ...]:
    """The strings a name is tested against: `"backbone" in name`, `name.startswith("head.")`
    (also given a tuple of them)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) and isinstance(node.left, ast.Constant):
            if isinstance(node.left.value, str):
                found.add(node.left.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith") and node.args:
            given = node.args[0]
            for item in given.elts if isinstance(given, ast.Tuple) else [given]:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    found.add(item.value)
    return tuple(sorted(found))


def _string_constants(tree: ast.Module) -> tuple[str, ...]:
    """The file's short string constants: where a loop unfreezes parameters by name
    (`p.requires_grad = any(s in name for s in ("adapter_bias", ...))`), the names it may pick."""
    found = {
        n.value for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) <= 80 and _KEY_WORD.match(n.value)
    }
    return tuple(sorted(found))


# A string that may be (part of) a parameter's qualified name: `adapter_bias`, `attn.`, `norm_1`.
_KEY_WORD = re.compile(r"[\w.]*[A-Za-z_][\w.]*\Z")


def _turned_on(node: ast.AST) -> Optional[ast.expr]:
    """The receiver whose requires_grad `node` turns on (`r.requires_grad = v`, `r.requires_grad_(v)`), or None."""
    if isinstance(node, ast.Assign):
        target = next((t for t in node.targets if isinstance(t, ast.Attribute) and t.attr == "requires_grad"), None)
        if target is not None and not _is_false(node.value):
            return target.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        value = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
        if value is None or not _is_false(value):
            return node.func.value
    return None


def _only_given_false(tree: ast.Module, node: ast.AST) -> bool:
    """`def requires_grad(model, flag=True): ... p.requires_grad = flag`, called only as
    `requires_grad(ema, False)` in this file: a helper that freezes here, never unfreezes."""
    value = node.value if isinstance(node, ast.Assign) else None
    if not isinstance(value, ast.Name):
        return False
    func = _enclosing_function(tree, node.lineno)  # type: ignore[attr-defined]
    if func is None:
        return False
    params = [*func.args.posonlyargs, *func.args.args]
    names = [a.arg for a in params]
    if value.id not in names:
        return False
    index = names.index(value.id)
    defaults = dict(zip(names[len(names) - len(func.args.defaults):], func.args.defaults))
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and called_name(c.func) == func.name]
    given = [_argument(call, index - (1 if _is_method_call(call) else 0), value.id) or defaults.get(value.id) for call in calls]
    return bool(calls) and all(g is not None and _is_false(g) for g in given)


def _argument(call: ast.Call, index: int, name: str) -> Optional[ast.expr]:
    keyword = next((k.value for k in call.keywords if k.arg == name), None)
    if keyword is not None:
        return keyword
    return call.args[index] if 0 <= index < len(call.args) and not isinstance(call.args[index], ast.Starred) else None


def _is_method_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute)


def _enclosing_function(tree: ast.Module, line: int) -> Optional[ast.FunctionDef]:
    found: Optional[ast.FunctionDef] = None
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, ast.FunctionDef):
                found = node
            stack.extend(node.body)
    return found


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _names_no_parameter(receiver: ast.expr, fresh: Callable[[str], bool]) -> bool:
    """`self.requires_grad = flag`, `x.detach().requires_grad_()`, an input tensor: no parameter."""
    if isinstance(receiver, ast.Name):
        return receiver.id == "self" or _PARAMETER_LIKE.search(receiver.id.lower()) is None or fresh(receiver.id)
    if isinstance(receiver, ast.Call):  # `torch.eye(3).requires_grad_()`, `w.detach().requires_grad_()`
        func = receiver.func
        return isinstance(func, ast.Attribute) and (
            func.attr in _FRESH_TENSOR_METHODS or (isinstance(func.value, ast.Name) and func.value.id == "torch")
        )
    if isinstance(receiver, ast.Subscript):
        return _names_no_parameter(receiver.value, fresh)  # `params[k]`, but not `outputs[0]`
    return not isinstance(receiver, ast.Attribute)  # arithmetic, a literal: a tensor computed here


def _fresh_here(tree: ast.Module, source: bytes, node: ast.AST, name: str) -> bool:
    return _bound_to_fresh_tensor(name, source) or _builds_own_parameter(tree, node, name)


def _builds_own_parameter(tree: ast.Module, node: ast.AST, name: str) -> bool:
    """The function holding the unfreezing binds `name` to a Parameter it builds itself, before
    it (`master = nn.Parameter(flat)`, then `master.requires_grad = True`: an fp16 master copy,
    none of the model's)."""
    func = _enclosing_function(tree, node.lineno)  # type: ignore[attr-defined]
    if func is None:
        return False
    for assign in ast.walk(func):
        if (
            isinstance(assign, ast.Assign) and assign.lineno < node.lineno  # type: ignore[attr-defined]
            and any(isinstance(t, ast.Name) and t.id == name for t in assign.targets)
            and isinstance(assign.value, ast.Call) and called_name(assign.value.func) == "Parameter"
        ):
            return True
    return False


def _bound_to_fresh_tensor(name: str, source: bytes) -> bool:
    """The file binds `name` to a fresh tensor somewhere (`w = w0.detach()`, `p = torch.zeros(3)`)."""
    pattern = rb"(?m)^[ \t]*" + re.escape(name.encode()) + rb"[ \t]*=[ \t]*(?:torch\.|[^=\n]*\.(?:" + b"|".join(m.encode() for m in sorted(_FRESH_TENSOR_METHODS)) + rb")\()"
    return re.search(pattern, source) is not None


def _first_meta_init(source: bytes) -> Optional[int]:
    """The line of the first meta-device construction; a storage made on meta (a lazy checkpoint
    loader's `TypedStorage(..., device="meta")`) builds no module, nor does a placeholder tensor
    (`torch.empty((1, 1), device="meta")`). (A commented-out setting,
    `# config.init_device="meta"`, still counts: llm-awq's only one keeps its rotary tables' fixes
    unsafe, and the table's real hazard, angles that overflow float16, is not detected yet.)"""
    for match in _META_INIT.finditer(source):
        start = source.rfind(b"\n", 0, match.start()) + 1
        before = source[start : match.start()]
        if b"Storage(" not in before and not _factory_argument(before):
            return _line_of(source, match.start())
    return None


# `torch.empty((1, 1), device="meta")`: a placeholder tensor (a dummy handed to a kernel).
_FACTORY_OPEN = re.compile(rb"\btorch\.(?:empty|zeros|ones|full|tensor|rand|randn|arange|empty_strided)\(")


def _factory_argument(before: bytes) -> bool:
    """Whether the text before `device="meta"` on its line opens a tensor factory whose argument
    it is (the parentheses after the factory's own are all closed): the factory makes one tensor
    on meta and builds no module."""
    opened = list(_FACTORY_OPEN.finditer(before))
    if not opened:
        return False
    rest = before[opened[-1].end() :]
    depth = 0
    for byte in rest:
        depth += (byte == ord("(")) - (byte == ord(")"))
        if depth < 0:
            return False
    return depth == 0


def _first_line(pattern: "re.Pattern[bytes]", source: bytes, tree: Optional[ast.Module] = None) -> Optional[int]:
    """The line of the first match in code: with `tree`, matches in a docstring or after a `#` on
    their line are prose (`:param params: ... ["training.resume=True"]`), not a site."""
    prose = _docstring_lines(tree) if tree is not None else frozenset()
    for match in pattern.finditer(source):
        line = _line_of(source, match.start())
        start = source.rfind(b"\n", 0, match.start()) + 1
        if line not in prose and b"#" not in source[start:match.start()]:
            return line
    return None


def _docstring_lines(tree: ast.Module) -> frozenset[int]:
    return frozenset(line for node in _docstrings(tree) for line in range(node.lineno, (node.end_lineno or node.lineno) + 1))


def _path_parts(path: str) -> list[str]:
    return [part for part in os.path.normpath(path).split(os.sep) if part not in ("", ".")]


def _shared_prefix(first: list[str], second: list[str]) -> int:
    shared = 0
    for a, b in zip(first[:-1], second[:-1]):  # folders only
        if a != b:
            break
        shared += 1
    return shared


def _line_of(source: bytes, offset: int) -> int:
    return source.count(b"\n", 0, offset) + 1


def _complex_functions(tree: ast.Module, source: bytes) -> Iterator[str]:
    """Top-level functions whose lines mention a complex constructor, dtype or literal."""
    if not any(word in source for word in _COMPLEX_WORDS) or _COMPLEX.search(source) is None:
        return
    lines = [_line_of(source, m.start()) for m in _COMPLEX.finditer(source)]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            if any(node.lineno <= line <= end for line in lines):
                yield node.name


# -- the whole project ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lineage:
    """What the bases of one class, defined in other files, may do to an attribute name."""

    ancestors: tuple[tuple[str, ClassFacts], ...]  # project classes of other files, nearest first
    outside: Optional[str]  # the first base that is neither in the project nor torch.nn.Module


class ProjectFacts:
    """The facts of every linted file, joined along the project's class hierarchy.

    Equal (and hashed) by a digest of its content: it is part of `Settings`, whose fingerprint
    keys the result cache, so a finding that depends on another file is recomputed when that
    file changes."""

    def __init__(
        self,
        files: Iterable[tuple[str, FileFacts]] = (),
        hierarchy: Optional[dict[str, list[str]]] = None,
        imported: Iterable[str] = (),
        held_moves: Iterable[tuple[str, tuple[str, ...], frozenset[str]]] = (),
    ) -> None:
        self.classes: dict[str, ClassFacts] = {}
        self.module_of: dict[str, str] = {}
        self.unfrozen: set[str] = set()
        self.unfreezes_any: Optional[str] = None
        self.unfreeze_words: set[str] = set()  # string constants of the files that unfreeze unnamed parameters
        self.unfreeze_filters: set[str] = set()  # the strings those files test names against
        self.meta_init: Optional[str] = None
        self.default_device: Optional[str] = None
        # every file's first optimizer (or trainer) state load: (path, line, the top-level names of
        # what the file imports), so a class is told of the load that may reach it
        self.resume_sites: list[tuple[str, int, tuple[str, ...]]] = []
        self.optimizer_builds: list[Build] = []  # every file's optimizer builds, and the project's own builders
        self.optimizer_builders: set[str] = set()
        self.pickles: Optional[str] = None  # `path:line` of the first pickle load or name-matched copy
        self.old_torch: Optional[str] = None  # `path:line` of a requirement pinning torch below 1.6
        self.functions: set[str] = set()
        self.complex_functions: set[str] = set()
        self.imported: set[str] = set(imported)  # every name or module an import of the run names
        # `nerf.renderer` -> the module names of the files `.../nerf/renderer.py` that define
        # classes: how an import may name them when their folder has no `__init__.py`
        self.path_modules: dict[str, set[str]] = {}
        self.module_files: dict[str, int] = {}  # module name -> how many files of the run take it
        # (class, attributes its move overrides assign on held modules, what its file imports)
        self.held_moves = sorted(held_moves)
        self.device_context_calls: dict[str, str] = {}  # method -> `path:line` of a call under `with torch.device(...)`
        self.exports: dict[str, tuple[str, ...]] = {}  # module -> its literal `__all__`
        self.set_outside: dict[str, str] = {}  # attribute name -> `path:line` of its first `<object>.<name> = ...`
        self.set_outside_plain: dict[str, str] = {}  # the same, for plain Python values (`= [1, 2]`)
        self.unfreezes_held: list[tuple[str, str]] = []  # (class, `path:line`) of `self.requires_grad_(True)`
        self.unfreezes_parts: list[tuple[str, str, tuple[str, ...]]] = []  # (class, `path:line`, attributes walked)
        self.recasts_held: list[tuple[str, str, str, str]] = []  # (holder, attribute, held class's name, `path:line`)
        # short class name -> (the class a call's import names, what it gives) for every call of
        # a class another file defines; and the names some file also mentions other than in such calls
        self.built: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.built_outside_tests: set[str] = set()  # short names some file other than a test builds
        self.loosely_named: set[str] = set()
        ordered = sorted(files, key=lambda item: item[0])
        for path, facts in ordered:
            self._add(path, facts)
        self.throwaway = _throwaway_classes(facts for _, facts in ordered)
        self.hierarchy = hierarchy or {}  # qualified class -> canonical qualified bases
        self.digest = self._digest()

    def _add(self, path: str, facts: FileFacts) -> None:
        for name, info in facts.classes.items():
            self.classes[name] = info
            self.module_of[name] = name.rpartition(".")[0]
        self.unfrozen.update(facts.unfrozen)
        if facts.unfreezes_any is not None and self.unfreezes_any is None:
            self.unfreezes_any = f"{path}:{facts.unfreezes_any}"
        self.unfreeze_words.update(facts.unfreeze_words)
        self.unfreeze_filters.update(facts.unfreeze_filters)
        if facts.meta_init is not None and self.meta_init is None:
            self.meta_init = f"{path}:{facts.meta_init}"
        if facts.default_device is not None and self.default_device is None:
            self.default_device = f"{path}:{facts.default_device}"
        if facts.resumes_optimizer is not None:
            tops = sorted({name.lstrip("*").split(".")[0] for name in facts.imports})
            self.resume_sites.append((path, facts.resumes_optimizer, tuple(tops)))
        self.optimizer_builds.extend(facts.optimizer_builds)
        self.optimizer_builders.update(facts.optimizer_builders)
        if facts.pickles is not None and self.pickles is None:
            self.pickles = f"{path}:{facts.pickles}"
        if facts.old_torch is not None and self.old_torch is None:
            self.old_torch = f"{path}:{facts.old_torch}"
        self.functions.update(facts.functions)
        self.complex_functions.update(facts.complex_functions)
        self.imported.update(facts.imports)
        for method, line in facts.device_context_calls:
            self.device_context_calls.setdefault(method, f"{path}:{line}")
        for name, line in facts.set_outside:
            self.set_outside.setdefault(name, f"{path}:{line}")
        for name, line in facts.set_outside_plain:
            self.set_outside_plain.setdefault(name, f"{path}:{line}")
        self.unfreezes_held.extend((name, f"{path}:{line}") for name, line in facts.unfreezes_held)
        self.unfreezes_parts.extend((name, f"{path}:{line}", attrs) for name, line, attrs in facts.unfreezes_parts)
        self.recasts_held.extend((holder, attr, held, f"{path}:{line}") for holder, attr, held, line in facts.recasts_held)
        in_test = is_test_module(".".join(_path_parts(path[:-3] if path.endswith(".py") else path)))
        for name, target, given in facts.constructions:
            self.built.setdefault(name, []).append((target, given))
            if not in_test:  # a test's build shows nothing of how users build a library class
                self.built_outside_tests.add(name)
        only = set(facts.only_built)
        self.loosely_named.update(name for name, _, _ in facts.class_mentions if name not in only)
        self.loosely_named.update(name for name, _, _ in facts.constructions if name not in only)
        # a class a file imports and never calls may be built unseen (through `globals()`)
        imported = (name.rpartition(".")[2] for name in facts.imports if not name.startswith("*"))
        self.loosely_named.update(name for name in imported if name[:1].isupper() and name not in only)
        modules = {name.rpartition(".")[0] for name in facts.classes}
        if facts.exports is not None:
            for module in modules:
                self.exports[module] = facts.exports
        for module in modules:
            self.module_files[module] = self.module_files.get(module, 0) + 1
            for spelled in _path_module_names(path):
                self.path_modules.setdefault(spelled, set()).add(module)

    def _digest(self) -> str:
        if not self.classes and not self.hierarchy and not self.unfrozen:
            if self.unfreezes_any is None and self.meta_init is None and not self.resume_sites and not self.functions:
                return ""
        payload = json.dumps(
            [
                sorted((k, v.to_json()) for k, v in self.classes.items()),
                sorted(self.hierarchy.items()),
                sorted(self.unfrozen), self.unfreezes_any, sorted(self.unfreeze_words), sorted(self.unfreeze_filters), self.meta_init, self.default_device,
                self.resume_sites, self.optimizer_builds, sorted(self.optimizer_builders),
                self.pickles, self.old_torch,
                sorted(self.functions),
                sorted(self.complex_functions),
                sorted(self.imported),
                sorted((k, sorted(v)) for k, v in self.path_modules.items()),
                [(owner, attrs, sorted(reaches)) for owner, attrs, reaches in self.held_moves],
                sorted(self.device_context_calls.items()),
                sorted(self.throwaway),
                sorted(self.exports.items()),
                sorted(self.set_outside.items()),
                sorted(self.set_outside_plain.items()),
                sorted(self.unfreezes_held),
                sorted(self.unfreezes_parts),
                sorted(self.recasts_held),
                sorted(self.built.items()),
                sorted(self.loosely_named),
            ],
            separators=(",", ":"),
        )
        return hashlib.blake2b(payload.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProjectFacts) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"ProjectFacts({self.digest or 'empty'})"

    def imported_elsewhere(self, qualified: str) -> bool:
        """Whether some import of the run may reach the class `qualified`: one names it (a
        re-export names it too), names its module as a value, or imports `*` from its module.
        (Other files then may build it, and what they pass is not read.) Reaching it through an
        attribute path from a package imported alone (`import pkg`, then `pkg.mod.Cls`) is not
        seen."""
        module, _, short = qualified.rpartition(".")
        star = f"*{module}" in self.imported and short in self.exports.get(module, (short,))
        return qualified in self.imported or module in self.imported or star

    def given_elsewhere(self, qualified: str, parameter: str, position: Optional[int]) -> Optional[bool]:
        """Whether a call in another file of the run may give the constructor of `qualified` its
        `parameter` (at `position`) a value other than None; None when some file may build the
        class unseen (names it other than in calls, imports its module as a value or `*` from
        it). A call of another class of the same name is not counted; one whose import names no
        class of the run (a re-export) is."""
        calls = self.calls_elsewhere(qualified)  # the text of the run is read for capitalised class names only
        return None if calls is None else any(gives(given, parameter, position) for given in calls)

    def calls_elsewhere(self, qualified: str) -> Optional[list[tuple[str, ...]]]:
        """What each call in another file of the run gives the constructor of `qualified` (see
        `given_elsewhere`); None when some file may build the class unseen."""
        module, _, short = qualified.rpartition(".")
        if not short[:1].isupper() or short in self.loosely_named or module in self.imported or f"*{module}" in self.imported:
            return None
        return [given for target, given in self.built.get(short, ()) if target == qualified or target not in self.classes]

    def named_loosely(self, short: str) -> bool:
        """Whether a file of the run names class `short` other than in a call it reads (a
        registry dict, a factory's table, an import it never calls): it may be built unseen."""
        return short in self.loosely_named

    def built_only_by_tests(self, qualified: str) -> bool:
        """Other files build the class, all of them tests: a library class, which users build
        their own way."""
        short = qualified.rpartition(".")[2]
        return short in self.built and short not in self.built_outside_tests

    def moved_by_holder(self, qualified: str, attr: str) -> Optional[str]:
        """A class whose `_apply`/`to` override assigns `<held>.<attr>` on a module it holds, and
        that builds `qualified` into an attribute of its own or lives in a file importing it (or
        `*` from its module): the holder moves that tensor of its `qualified` instance along
        (YOLO's `self.detect.stride = fn(self.detect.stride)`)."""
        module, _, short = qualified.rpartition(".")
        # An import may spell the module by its path (`yolov6.models.effidehead` for a file whose
        # folders have no `__init__.py`, so that its module name is `effidehead`).
        spellings = {module} | {spelled for spelled, modules in self.path_modules.items() if module in modules}
        for owner, attrs, reaches in self.held_moves:
            if attr not in attrs:
                continue
            holds = short in self.classes[owner].holds if owner in self.classes else False
            if holds or any(_reaches(r, spellings, short) for r in reaches):
                return owner
        return None

    def hidden_in_run(self, qualified: str) -> bool:
        """Whether the class `qualified`, which no file of the run defines under that name, is in
        a file of the run whose path spells its module (`nerf/renderer.py` for `nerf.renderer.X`,
        imported from a folder without `__init__.py`) and whose own module name another file
        shares (`dnerf/renderer.py`), so that its classes could not be told apart."""
        module = qualified.rpartition(".")[0]
        return any(self.module_files.get(m, 0) > 1 for m in self.path_modules.get(module, ()))

    @property
    def known(self) -> bool:
        """Whether a project scan produced these facts (an API call on one source has none)."""
        return bool(self.digest)

    def lineage(self, qualified: str) -> Optional[Lineage]:
        """The bases of `qualified` that live in other files, or None when the class is unknown."""
        if qualified not in self.classes:
            return None
        return self._lineages.get(qualified) or self._lineage(qualified)

    @cached_property
    def _lineages(self) -> dict[str, Lineage]:
        return {}

    def _lineage(self, qualified: str) -> Lineage:
        own_module = self.module_of[qualified]
        ancestors: list[tuple[str, ClassFacts]] = []
        outside: Optional[str] = None
        seen = {qualified}
        queue = list(self.hierarchy.get(qualified, ()))
        while queue:
            base = queue.pop(0)
            if base in seen:
                continue
            seen.add(base)
            if base in self.classes:
                if self.module_of[base] != own_module:
                    ancestors.append((base, self.classes[base]))
                queue.extend(self.hierarchy.get(base, ()))
            elif outside is None and not _plain_module_base(base):
                outside = base
        lineage = Lineage(tuple(ancestors), outside)
        self._lineages[qualified] = lineage
        return lineage

    def descendants(self, qualified: str) -> list[tuple[str, ClassFacts]]:
        """Project classes of other files that derive from `qualified`, directly or not."""
        found: list[tuple[str, ClassFacts]] = []
        own_module = self.module_of.get(qualified)
        frontier = {qualified}
        seen = {qualified}
        while frontier:
            frontier = {name for base in frontier for name in self._subclasses.get(base, ())} - seen
            seen |= frontier
            found.extend((name, self.classes[name]) for name in sorted(frontier) if self.module_of.get(name) != own_module)
        return found

    @cached_property
    def _subclasses(self) -> dict[str, list[str]]:
        """Each class's direct subclasses (the hierarchy read the other way, indexed once)."""
        index: dict[str, list[str]] = {}
        for name, bases in self.hierarchy.items():
            for base in dict.fromkeys(bases):
                index.setdefault(base, []).append(name)
        return index

    def held_outside(self, name: str, module: str) -> bool:
        """Whether a class of a module other than `module` instantiates a class called `name`
        into an attribute."""
        return bool(self._holding_modules.get(name, frozenset()) - {module})

    @cached_property
    def _holding_modules(self) -> dict[str, frozenset[str]]:
        """For each class name, the modules whose classes instantiate it into an attribute."""
        found: dict[str, set[str]] = {}
        for qualified, facts in self.classes.items():
            for name in facts.holds:
                found.setdefault(name, set()).add(self.module_of.get(qualified, ""))
        return {name: frozenset(modules) for name, modules in found.items()}

    def is_module_class(self, qualified: str) -> bool:
        """Whether the project class `qualified` derives from `torch.nn.Module` (through project
        classes of any file, or a torch.nn class)."""
        seen: set[str] = set()
        queue = [qualified]
        while queue:
            name = queue.pop()
            if name in seen:
                continue
            seen.add(name)
            for base in self.hierarchy.get(name, ()):
                if is_module_base(base):
                    return True
                queue.append(base)
        return False

    def is_function(self, qualified: str) -> bool:
        """Whether an import's dotted name (`tbsim.utils.loss_utils.Loss_fn`) names a top-level
        function of the run, also where the run's module names drop the folders above the first
        `__init__.py` (`utils.loss_utils.Loss_fn`)."""
        parts = qualified.split(".")
        return any(".".join(parts[start:]) in self.functions for start in range(len(parts) - 1))

    def may_unfreeze(self, attr: str, owner: str = "") -> Optional[str]:
        """Where the project turns `requires_grad` on for a parameter named `attr` of the class
        called `owner`: by that name, or through a filter over parameter names in a file whose
        strings hold it (`"adapter_bias"`) or the attribute a model holds the class in
        (`"backbone" in name` picks every `backbone.<name>`)."""
        if attr in self.unfrozen:
            return f"`{attr}.requires_grad` is set elsewhere in the project"
        if self.unfreezes_any is not None and any(_overlaps(attr, word) for word in self.unfreeze_words):
            return f"{self.unfreezes_any} turns requires_grad on for parameters it picks, and `{attr}` is among its names"
        if self.unfreezes_any is not None:
            # the filter names the holder's attribute itself (`"backbone" in name`, `"backbone."`)
            holder = next((a for a in self._holder_attrs(owner) if any(word.strip(".") == a for word in self.unfreeze_filters)), None)
            if holder is not None:
                return f"{self.unfreezes_any} turns requires_grad on for parameters it picks, and `{holder}...{attr}` is among its names"
        return None

    def _holder_attrs(self, owner: str) -> set[str]:
        """The attributes the project holds an instance of class `owner` in, and those its holders
        are held in, up the chain (`backbone` and `patch_embedding` for `backbone.patch_embedding.w`)."""
        attrs: set[str] = set()
        seen, queue = {owner}, [owner]
        while queue:
            for holder, attr in self._held_as.get(queue.pop(), ()):
                attrs.add(attr)
                if holder not in seen:
                    seen.add(holder)
                    queue.append(holder)
        return attrs

    @cached_property
    def _held_as(self) -> dict[str, frozenset[tuple[str, str]]]:
        """For each class name, the (holder class name, attribute) pairs of the project's classes
        that hold an instance of it."""
        found: dict[str, set[tuple[str, str]]] = {}
        for qualified, facts in self.classes.items():
            for entry in facts.held_as:
                name, _, attr = entry.partition(":")
                found.setdefault(name.rpartition(".")[2], set()).add((qualified.rpartition(".")[2], attr))
        return {name: frozenset(pairs) for name, pairs in found.items()}

    @cached_property
    def trains_only_trainable(self) -> bool:
        """Every optimizer the run builds is given only parameters that require grad: a restored
        optimizer never held a frozen one (analysis/optimizer_builds.py)."""
        return trainable_only(self.optimizer_builds, self.optimizer_builders)

    def optimizer_resume_for(self, path: str, module: str) -> Optional[str]:
        """`path:line` of the optimizer state load to cite for a class of `module` (in the file
        `path`), None when the run has none. Loads that may reach it come first (their file
        imports its top-level package, sits in its top-level folder or at the run's root), then
        the nearest by folder: of a vendored trainer under `external/` and the project's own, the
        own one is the one that restores this model's optimizer. (A load elsewhere still counts:
        a generic `restore(model, optimizer)` helper in `common/` imports no model at all.)"""
        if not self.resume_sites or self.trains_only_trainable:
            return None
        top = module.split(".")[0]
        own = _path_parts(path)

        def rank(site: tuple[str, int, tuple[str, ...]]) -> tuple[bool, int]:
            parts = _path_parts(site[0])
            reaches = top in site[2] or parts[:1] == own[:1] or len(parts) == 1
            return reaches, _shared_prefix(parts, own)

        site_path, line, _ = max(self.resume_sites, key=rank)
        return f"{site_path}:{line}"

    def unfrozen_by_holder(self, qualified: str) -> Optional[str]:
        """Where a class whose instances hold `qualified` (through attributes it or a subclass or base
        builds, at any depth) turns requires_grad on for itself or one of them
        (`self.requires_grad_(True)`): then every parameter of `qualified` is trained there."""
        short = qualified.rpartition(".")[2]
        for holder, site in self.unfreezes_held:
            if holder != qualified and short in self._held_from(holder):
                return f"{site} turns requires_grad on for a {holder.rpartition('.')[2]} and every module it holds, {short} among them"
        for holder, site, attrs in self.unfreezes_parts:
            if holder != qualified and short in self._held_in(holder, attrs):
                shown = ", ".join(f"`{attr}`" for attr in attrs)
                return f"{site} turns requires_grad on for what a {holder.rpartition('.')[2]} holds in {shown}, {short} among them"
        return None

    def _held_in(self, holder: str, attrs: tuple[str, ...]) -> set[str]:
        """Short names of the classes an instance of `holder` may hold in the attributes `attrs`,
        at any depth."""
        holders = {name.rpartition(".")[2] for name in self._holder_family(holder)}
        direct = {name for name, pairs in self._held_as.items() if any(h in holders and a in attrs for h, a in pairs)}
        held = set(direct)
        for name in direct:
            for qualified in self._classes_by_short_name.get(name, ()):
                held |= self._held_from(qualified)
        return held

    def kept_float_by_holder(self, qualified: str) -> Optional[str]:
        """Where a holder's cast to half puts the module it holds back in float32 (`self.kernel =
        self.kernel.float()` in its `half()`), `qualified` being that module's class or one it holds
        at any depth: the holder keeps the tensors of `qualified` in full precision on purpose."""
        short = qualified.rpartition(".")[2]
        for holder, attr, held, site in self.recasts_held:
            inside = (name for name in self._classes_by_short_name.get(held, ()) if name != qualified)
            if held == short or any(short in self._held_from(name) for name in inside):
                return f"{site} casts `{attr}` ({held}) back to float32 after {holder.rpartition('.')[2]} is cast to half"
        return None

    def _holder_family(self, holder: str) -> list[str]:
        """`holder`, its subclasses and its bases in any file: the classes whose code builds what
        an instance of `holder` holds."""
        family = [holder, *(name for name, _ in self.descendants(holder))]
        queue = list(self.hierarchy.get(holder, ()))
        while queue:
            base = queue.pop(0)
            if base in self.classes and base not in family:
                family.append(base)
                queue.extend(self.hierarchy.get(base, ()))
        return family

    def _held_from(self, holder: str) -> set[str]:
        """Short names of the classes an instance of `holder` may hold, at any depth."""
        start = self._holder_family(holder)
        by_short = self._classes_by_short_name
        held: set[str] = set()
        queue = [name for name in start if name in self.classes]
        seen = set(queue)
        while queue:
            for short in self.classes[queue.pop()].holds:
                held.add(short)
                for name in by_short.get(short, ()):
                    if name not in seen:
                        seen.add(name)
                        queue.append(name)
        return held

    @cached_property
    def _classes_by_short_name(self) -> dict[str, list[str]]:
        by_short: dict[str, list[str]] = {}
        for name in self.classes:
            by_short.setdefault(name.rpartition(".")[2], []).append(name)
        return by_short

    def may_unfreeze_unnamed(self) -> Optional[str]:
        """Where the project turns `requires_grad` on for parameters it does not name (a loop over
        some module's `parameters()`): it may reach any parameter, or none of this class."""
        return None if self.unfreezes_any is None else f"{self.unfreezes_any} turns requires_grad on for parameters it does not name"


def _reaches(imported: str, spellings: set[str], short: str) -> bool:
    """Whether an import (`pkg.a.b.Cls`, `*pkg.a.b`) names class `short` of a module spelled one of
    `spellings` (`a.b`): a path spelling is the tail of the dotted name the import uses."""
    target = imported[1:] if imported.startswith("*") else imported.rpartition(".")[0]
    if not imported.startswith("*") and imported.rpartition(".")[2] != short:
        return False
    return any(target == m or ("." in m and target.endswith(f".{m}")) for m in spellings)


def _path_module_names(path: str) -> list[str]:
    """`a.b` and `x.a.b` for `.../x/a/b.py`: the dotted names of its last two and three path parts
    (parts that are no identifiers end the list)."""
    parts = path.replace("\\", "/").split("/")
    parts[-1] = parts[-1].rsplit(".", 1)[0]
    names = []
    for size in (2, 3):
        tail = parts[-size:]
        if len(tail) < size or not all(p.isidentifier() for p in tail):
            break
        names.append(".".join(tail))
    return names


def _overlaps(attr: str, word: str) -> bool:
    """Whether a name filter testing `word` may pick the parameter `<prefix>.<attr>`: the word holds
    the name (`"attn.adapter_bias"`) or is part of it (`"bias"`; not one or two characters, which
    every name may hold)."""
    return attr in word or (len(word) >= 3 and word.strip(".") in attr)


def _plain_module_base(name: str) -> bool:
    return name in ("torch.nn.Module", "torch.nn.modules.module.Module", "object", "builtins.object")


EMPTY = ProjectFacts()
