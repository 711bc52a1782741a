"""Project-wide index of nn.Module subclasses, so a class whose base lives in another file of the
linted tree (a loss base, a VAE base, an augmentation base) is still known to be a module.

Each file is analysed on its own with libcst; this pre-pass is deliberately cheaper: a substring
test, then Python's own `ast` parser on files that define classes, reading only class headers and
imports. Module-ness then propagates across files until nothing changes. With a cache directory,
each file's index is kept by content hash (`IndexCache`), so an unchanged tree costs a read and a
hash per file.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import tempfile
import warnings
from functools import cached_property, lru_cache
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional, cast

from bufferlint.analysis import torch_api
from bufferlint.analysis.ast_reading import absolute_module
from bufferlint.analysis.project_facts import FileFacts, ProjectFacts, file_facts, may_hold_facts, top_level

if TYPE_CHECKING:
    from bufferlint.prechecked import Registry

_CLASS_HEADER = re.compile(rb"^[ \t]*class[ \t]+\w+", re.MULTILINE)
_MAX_ALIAS_HOPS = 8  # re-export chains (`pkg/__init__.py` importing from `pkg/base.py`) are short


@dataclass
class FileIndex:
    """Class headers and imports of one file, with every name qualified as far as possible."""

    module: str
    classes: dict[str, list[str]] = field(default_factory=dict)  # qualified class -> qualified bases
    aliases: dict[str, str] = field(default_factory=dict)  # `module.local` -> what the import names
    facts: FileFacts = field(default_factory=FileFacts)  # what fixes must prove about other files


def module_name(path: str) -> str:
    """Dotted module name of a file: its folders up to the first one without `__init__.py`."""
    folder, filename = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(filename)[0]
    package = _package_of(folder)
    if stem == "__init__":
        return package or stem
    return f"{package}.{stem}" if package else stem


@lru_cache(maxsize=None)
def _package_of(folder: str) -> str:
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return ""
    parent, name = os.path.split(folder)
    if not name:
        return ""
    outer = _package_of(parent)
    return f"{outer}.{name}" if outer else name


def index_source(source: bytes, module: str, is_package: bool = False) -> Optional[FileIndex]:
    """The class headers and imports of one file; None when it defines no class or does not parse."""
    tree = parse_for_index(source)
    return None if tree is None else index_tree(tree, module, is_package, source)


def parse_for_index(source: bytes) -> Optional[ast.Module]:
    if not _CLASS_HEADER.search(source) and b"import" not in source and not may_hold_facts(source):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # the per-file pass reports parse errors


def index_tree(tree: ast.Module, module: str, is_package: bool = False, source: bytes = b"") -> FileIndex:
    index = FileIndex(module, facts=file_facts(tree, module, source, is_package))
    package = module if is_package else module.rpartition(".")[0]
    local: dict[str, str] = {}
    imports: set[str] = set()
    for node in top_level(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bindings = _import_bindings(node, package)
            local.update(bindings)
            imports.update(_imported_names(node, package, bindings))
        elif isinstance(node, ast.ClassDef):
            local[node.name] = f"{module}.{node.name}"
    for node in top_level(tree.body):
        if isinstance(node, ast.ClassDef):
            bases = [_qualify(base, local) for base in node.bases]
            index.classes[f"{module}.{node.name}"] = [b for b in bases if b is not None]
    index.aliases = {f"{module}.{name}": target for name, target in local.items() if target != f"{module}.{name}"}
    if source:  # the text tells which names an aliased module is read for
        imports = _reached_through_aliases(source, imports, _module_aliases(tree.body, package))
    index.facts.imports = tuple(sorted(imports - {""}))
    if any(facts.moves_held for facts in index.facts.classes.values()):
        index.facts.reaches = tuple(sorted(_imports_anywhere(tree, package) - {""}))
    return index


def _module_aliases(body: list[ast.stmt], package: str) -> dict[str, str]:
    """`import pkg.models.vit as vit` at the top level: alias -> module (an `as` on `import`
    always names a module), for modules no other import of the file names."""
    aliases: dict[str, str] = {}
    named: dict[str, int] = {}
    for node in top_level(body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported_names(node, package, _import_bindings(node, package)):
                named[name] = named.get(name, 0) + 1
        if isinstance(node, ast.Import):
            aliases.update((alias.asname, alias.name) for alias in node.names if alias.asname)
    return {
        alias: module
        for alias, module in aliases.items()
        if named.get(module) == 1 and list(aliases.values()).count(module) == 1 and module.split(".")[0] not in _LIBRARIES
    }


# Libraries nearly every file imports under an alias (`torch.nn as nn`, `numpy as np`): their
# classes are not the project's, so which of their names a file reads tells nothing, and reading
# every `nn.` and `np.` of every file was a tenth of the index's cost. Such an import reaches the
# whole module, as an alias used some other way does (never_given.py then proves less, not more).
_LIBRARIES = frozenset(("torch", "numpy", "scipy", "matplotlib", "pandas", "tensorflow", "jax"))


def _reached_through_aliases(source: bytes, imports: set[str], aliases: dict[str, str]) -> set[str]:
    """What the file's imports reach, where a module imported under an alias is only ever read as
    `vit.build(...)`: then it reaches `pkg.models.vit.build`, not every class of the module (a
    class the file never names is not built there). An alias used any other way (handed to a
    function, `getattr(vit, name)`, `vit.__dict__[name]`, or only named in a comment) still
    reaches the whole module. Read from the text, outside import lines."""
    reached = set(imports)
    for alias, module in aliases.items():
        attributes = _attributes_read(source, alias)
        if attributes is None:
            continue
        reached.discard(module)
        reached.update(f"{module}.{attr}" for attr in attributes)
    return reached


def _attributes_read(source: bytes, alias: str) -> Optional[set[str]]:
    """The names read on `alias` (`alias.name`), or None when it is used some other way."""
    found: set[str] = set()
    pattern = re.compile(rb"(?<![\w.])" + re.escape(alias.encode()) + rb"\b(?:[ \t]*\.[ \t]*(\w+))?")
    for match in pattern.finditer(source):
        start = source.rfind(b"\n", 0, match.start()) + 1
        if _IMPORT_START.match(source, start):
            continue
        attribute = match.group(1)
        if attribute is None or attribute.startswith(b"__"):
            return None
        found.add(attribute.decode("ascii", "replace"))
    return found or None  # imported for its side effects (a registry filled on import): all of it


_IMPORT_START = re.compile(rb"[ \t]*(?:from[ \t]|import[ \t])")


def _imports_anywhere(tree: ast.Module, package: str) -> set[str]:
    """What every import of the file names, in functions too (`from .heads import Detect` inside
    a builder): read only for the few files whose classes move a held module's tensors."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(_imported_names(node, package, _import_bindings(node, package)))
    return names


def _imported_names(node: ast.stmt, package: str, bindings: dict[str, str]) -> set[str]:
    """What an import names (ProjectFacts.imported_elsewhere): the targets it binds, each module
    `import a.b` loads in full, and `*m` for `from m import *`."""
    names = set(bindings.values())
    if isinstance(node, ast.Import):
        names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
        source = absolute_module(node.module or "", node.level, package)
        if source:
            names.add(f"*{source}")
    return names


def _import_bindings(node: ast.stmt, package: str) -> dict[str, str]:
    if isinstance(node, ast.Import):
        return plain_import_bindings(node)
    bindings: dict[str, str] = {}
    assert isinstance(node, ast.ImportFrom)
    base = absolute_module(node.module or "", node.level, package)
    if base is None:
        return bindings
    for alias in node.names:
        if alias.name != "*":
            bindings[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return bindings


def plain_import_bindings(node: ast.Import) -> dict[str, str]:
    """`import a.b as c` binds c to a.b; `import a.b` binds a (which then reaches a.b itself)."""
    bindings: dict[str, str] = {}
    for alias in node.names:
        if alias.asname:
            bindings[alias.asname] = alias.name
        else:
            top = alias.name.split(".")[0]
            bindings[top] = top
    return bindings


def _qualify(node: ast.expr, local: dict[str, str]) -> Optional[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None  # `Base[T]`, calls, ...: not a plain class reference
    head = local.get(node.id)
    if head is None:
        return None
    return ".".join([head, *reversed(parts)])


class ProjectIndex:
    """Module classes of a set of files, propagated through imports and re-exports."""

    def __init__(self, files: Iterable[FileIndex], extra_bases: Iterable[str] = ()) -> None:
        self.classes: dict[str, list[str]] = {}
        self.aliases: dict[str, str] = {}
        self._files_per_module: dict[str, int] = {}  # loose scripts in two folders share `model`
        for index in files:
            self.classes.update(index.classes)
            self.aliases.update(index.aliases)
            self._files_per_module[index.module] = self._files_per_module.get(index.module, 0) + 1
        self.extra_bases = frozenset(extra_bases)
        self.modules: set[str] = set()
        self._propagate()

    def canonical(self, name: str) -> str:
        """Follow re-exports (`pkg.Base` -> `pkg.base.Base`) to where a class is defined; an
        import whose module path and the file's module name differ by leading folders is matched
        by the rest (`_located`)."""
        for _ in range(_MAX_ALIAS_HOPS):
            if name in self.classes:
                return name
            target = self._alias_target(name)
            if target is None or target == name:
                break
            name = target
        return self._located(name)

    def _located(self, name: str) -> str:
        """`name`, or the one class of the run that it names once leading folders are set aside:
        - `ldm.models.diffusion.ddpm.DDPM` is `diffusion.ddpm.DDPM` when `ldm/` and `models/` have
          no `__init__.py` (namespace folders: the module name starts below them);
        - `models.utils.base.Model` is `repo.models.utils.base.Model` when the repository's own
          folder has an `__init__.py` but its scripts import from inside it.
        The module path must keep at least two parts, and the match must be the only one."""
        if name in self.classes:
            return name
        module, _, short = name.rpartition(".")
        candidates = self._by_short_name.get(short)
        if not candidates or module.count(".") < 1:
            return name  # most names an import spells are no class of the run: no walk
        parts = module.split(".")
        found = {f"{'.'.join(parts[start:])}.{short}" for start in range(1, len(parts) - 1)} & candidates
        found |= {key for key in candidates if key.endswith(f".{name}")}
        return found.pop() if len(found) == 1 else name

    @cached_property
    def _by_short_name(self) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for key in self.classes:
            index.setdefault(key.rpartition(".")[2], set()).add(key)
        return index

    def _alias_target(self, name: str) -> Optional[str]:
        # `pkg.sub.Base` may be `pkg.sub` imported under an alias, then `.Base` on it.
        head, rest = name, ""
        while head:
            target = self.aliases.get(head)
            if target is not None:
                return f"{target}{rest}"
            head, _, last = head.rpartition(".")
            rest = f".{last}{rest}"
        return None

    def _is_module_base(self, name: str) -> bool:
        resolved = self.canonical(name)
        return (
            torch_api.is_module_base(resolved)
            or resolved in self.modules
            or name in self.extra_bases
            or resolved in self.extra_bases
            or name.rpartition(".")[2] in self.extra_bases
        )

    def _propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for name, bases in self.classes.items():
                if name not in self.modules and any(self._is_module_base(b) for b in bases):
                    self.modules.add(name)
                    changed = True

    def facts(self, files: Iterable[tuple[str, FileIndex]]) -> ProjectFacts:
        """What fixes must prove about other files (project_facts.py), along the class hierarchy."""
        hierarchy = {name: [self.canonical(b) for b in bases] for name, bases in self.classes.items()}
        files = list(files)
        # What imports name, also as where it is defined (an import through a re-export reaches it).
        imported = {self._canonical_import(name) for _, index in files for name in index.facts.imports}
        held = [
            (owner, facts.moves_held, frozenset(self._canonical_import(name) for name in index.facts.reaches))
            for _, index in files for owner, facts in index.facts.classes.items() if facts.moves_held
        ]
        return ProjectFacts(((path, index.facts) for path, index in files), hierarchy, imported, held)

    def _canonical_import(self, name: str) -> str:
        return f"*{self.canonical(name[1:])}" if name.startswith("*") else self.canonical(name)

    def base_names(self) -> tuple[str, ...]:
        """Names under which the per-file pass may meet a project module class: for one used as a
        base in another class, qualified, re-exported, and the bare class name unless a non-module
        class shares it; for the others, only the qualified name, so that a call to a module
        class another file defines (`self.background = BackgroundField(...)` with the class
        imported) is known to build a submodule."""
        used = {self.canonical(b) for bases in self.classes.values() for b in bases} & self.modules
        non_module_short = {n.rpartition(".")[2] for n in self.classes if n not in self.modules}
        # Only where one file takes the module name: `model.Encoder` of two loose folders may be a
        # module in one and a plain class in the other.
        names: set[str] = {m for m in self.modules if self._files_per_module.get(m.rpartition(".")[0]) == 1}
        for qualified in used:
            short = qualified.rpartition(".")[2]
            names.add(qualified)
            if short not in non_module_short:
                names.add(short)
                # `from . import base` then `class A(base.Base)`: written as `base.Base`.
                names.add(".".join(qualified.split(".")[-2:]))
        for alias, target in self.aliases.items():
            if self.canonical(target) in used:
                names.add(alias)
        return tuple(sorted(names))


def project_module_bases(paths: Iterable[str], extra_bases: Iterable[str] = (), cache_dir: Optional[str] = None) -> tuple[str, ...]:
    """The names to add to `module_bases` for a run over `paths`; `cache_dir`: reuse file indexes."""
    return scan_project(paths, extra_bases, cache_dir).bases


@dataclass
class ProjectScan:
    bases: tuple[str, ...]  # to add to `module_bases`
    checked: "Registry"  # what the per-file pass need not parse again (see prechecked.py)
    facts: ProjectFacts = field(default_factory=ProjectFacts)


def scan_project(
    paths: Iterable[str], extra_bases: Iterable[str] = (), cache_dir: Optional[str] = None, context: Iterable[str] = (),
) -> ProjectScan:
    """Index every file of the run (one `ast` parse each, or a cache hit), then propagate.
    `context`: other files of the project, indexed for what they tell about the run's files but
    not checked (project_context.py)."""
    from bufferlint.prechecked import examine
    from bufferlint.source import digest

    cache = IndexCache.load(cache_dir) if cache_dir is not None else None
    extra_bases = tuple(extra_bases)
    indexes: list[tuple[str, FileIndex]] = []
    checked: Registry = {}
    checked_paths = frozenset(paths := list(paths))
    for path in [*paths, *context]:
        if not path.endswith((".py", ".pyi")):
            continue
        stat: Optional[os.stat_result] = None
        if path not in checked_paths and cache is not None:
            try:
                stat = os.stat(path)
            except OSError:
                continue
            known_index = cache.unchanged(path, stat)  # context: as last read, no read at all
            if known_index is not _CHANGED:
                if known_index is not None:
                    indexes.append((path, cast(FileIndex, known_index)))
                continue
        try:
            with open(path, "rb") as handle:
                source = handle.read()
        except OSError:
            continue
        index, tree, key = _file_index(source, path, cache)
        if cache is not None and stat is not None:
            cache.remember_stat(path, stat, key)
        known = examine(source, tree, extra_bases) if tree is not None and path in checked_paths else None
        if known is not None:
            checked[digest(source)] = known
        if index is not None:
            indexes.append((path, index))
    if cache is not None:
        cache.save()
    project = ProjectIndex((index for _, index in indexes), extra_bases)
    return ProjectScan(project.base_names(), checked, project.facts(indexes))


def _file_index(source: bytes, path: str, cache: "Optional[IndexCache]") -> tuple[Optional[FileIndex], Optional[ast.Module], str]:
    """The file's index, its tree when this call parsed it (not on a cache hit), and its cache key
    ("" without a cache)."""
    module, is_package = module_name(path), os.path.basename(path) == "__init__.py"
    key = IndexCache.key(source, module, is_package) if cache is not None else ""
    if cache is not None and key in cache.entries:
        return cache.get(key, module), None, key
    try:
        tree = parse_for_index(source)
        index = None if tree is None else index_tree(tree, module, is_package, source)
    except (RecursionError, MemoryError):
        return None, None, key  # too deeply nested to index: the per-file pass reports it (BUF999); not cached
    if cache is not None:
        cache.put(key, index)
    return index, tree, key


_CHANGED = object()  # IndexCache.unchanged(): the file must be read


class IndexCache:
    """File indexes by content hash, in one JSON file of the result cache directory.

    One file (not one per source file) because a warm run reads every entry. Entries only depend on
    a file's bytes, module name and bufferlint's code, so concurrent runs write compatible content;
    the file is replaced atomically. It keeps older entries (a one-file run must not evict the rest
    of the tree) until it holds more than `MAX_ENTRIES`, then only those of the last run.
    """

    MAX_ENTRIES = 50_000

    def __init__(self, path: str, salt: str, entries: dict[str, object], stats: Optional[dict[str, list[Any]]] = None) -> None:
        self.path, self.salt, self.entries = path, salt, entries
        self.used: dict[str, object] = {}
        self.changed = False
        # Files a run read only for context (project_context.py): absolute path -> [size, mtime_ns,
        # key, module], so that the next run takes their index without reading them when none changed.
        self.stats: dict[str, list[Any]] = stats or {}

    def unchanged(self, path: str, stat: os.stat_result) -> "Optional[FileIndex] | object":
        """The index of a context file whose size, mtime and module name are as last read (a folder
        that gains an `__init__.py` renames its files' modules), else `_CHANGED`."""
        known = self.stats.get(os.path.abspath(path))
        module = module_name(path)
        if (
            known is None or len(known) != 4 or known[0] != stat.st_size or known[1] != stat.st_mtime_ns
            or known[3] != module or known[2] not in self.entries
        ):
            return _CHANGED
        return self.get(known[2], module)

    def remember_stat(self, path: str, stat: os.stat_result, key: str) -> None:
        """`stat` taken before the file was read (an edit in between leaves a newer mtime on disk),
        `key` the index key of what was read."""
        entry = [stat.st_size, stat.st_mtime_ns, key, module_name(path)]
        key = os.path.abspath(path)
        if self.stats.get(key) != entry:
            self.stats[key] = entry
            self.changed = True

    @classmethod
    def load(cls, directory: str) -> "IndexCache":
        from bufferlint import __version__
        from bufferlint.cache import FORMAT_VERSION, code_fingerprint

        path = os.path.join(os.path.abspath(directory), f"project-index-{FORMAT_VERSION}.json")
        salt = f"{__version__}\0{code_fingerprint()}"
        try:
            with open(path, "rb") as handle:
                payload = json.loads(handle.read())
            fresh = payload.get("salt") == salt
            entries = payload["entries"] if fresh else {}
            stats = payload.get("stats", {}) if fresh else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            entries, stats = {}, {}
        return cls(path, salt, entries if isinstance(entries, dict) else {}, stats if isinstance(stats, dict) else {})

    @staticmethod
    def key(source: bytes, module: str, is_package: bool) -> str:
        digest = hashlib.blake2b(f"{module}\0{int(is_package)}\0".encode("utf-8", "surrogateescape"), digest_size=16)
        digest.update(source)
        return digest.hexdigest()

    def get(self, key: str, module: str) -> Optional[FileIndex]:
        entry = self.entries[key]
        self.used[key] = entry
        if entry is None:
            return None
        classes, aliases, facts = cast(list[Any], entry)
        return FileIndex(module, dict(classes), dict(aliases), FileFacts.from_json(facts))

    def put(self, key: str, index: Optional[FileIndex]) -> None:
        self.used[key] = None if index is None else [index.classes, index.aliases, index.facts.to_json()]
        self.changed = True

    def save(self) -> None:
        """Write the entries when any was new (a cache that cannot be written is silently unused)."""
        if not self.changed:
            return
        from bufferlint.cache import ensure_cache_dir

        entries = {**self.entries, **self.used}
        if len(entries) > self.MAX_ENTRIES:
            entries = self.used
        stats = {path: stat for path, stat in self.stats.items() if stat[2] in entries}
        payload = json.dumps({"salt": self.salt, "entries": entries, "stats": stats}, separators=(",", ":"))
        try:
            ensure_cache_dir(os.path.dirname(self.path), os.path.dirname(self.path))
            fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(self.path))
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(temp, self.path)
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass
