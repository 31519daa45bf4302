"""Code versions derived from what decides an artifact's content — never bumped by hand.

An artifact declares a `CodeScope`: the domain modules it runs (their in-package imports are followed
transitively), the data files it reads, the prompt templates it renders and whether model settings matter. Its
code version is a hash over all of that, so editing the offline planner marks `workflow_plans` stale, editing the
screening rule book marks `skillhub_snapshot` stale, and editing a gate rule marks `gate_reports` stale — and
nothing else.

Python sources are hashed as their syntax tree with docstrings removed: reformatting, comments and docstring edits
change no output, so they mark nothing stale. Imports under `if TYPE_CHECKING:` are not followed (they run nothing).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.hashing import canonical_json, sha256_bytes

PACKAGE = "skill2env_dagster"
PACKAGE_ROOT = Path(__file__).resolve().parent
# Packages and modules whose code decides artifact content (cli/, assets/, resources/ only wire it up): the
# plain-Python domain, which imports no Dagster (pyproject.toml's import-linter contract; a test keeps both equal).
DOMAIN = ("skillhub", "knowledge", "planning", "llm", "tasks", "creator", "gates", "probe", "export", "rollouts",
          "models", "store", "reasons", "artifacts", "versions", "envconfig", "catalogue", "hashing", "atomic")
# Domain modules that decide no artifact's content: plain data the runner and the sensor pass between processes
# (kept Dagster-free below `assets` so the command line starts fast). Editing them must stale nothing.
ORCHESTRATION_ONLY = ("models.freshness",)


@dataclass(frozen=True)
class CodeScope:
    """What decides an artifact's content (see module docstring)."""

    modules: tuple[str, ...]  # dotted names below the package, e.g. "planning.offline"; a package means all of it
    data: tuple[str, ...] = ()  # file names under skill2env_dagster/data
    # Only when a model endpoint is configured (the offline generators read no prompt and call no client):
    prompts: tuple[str, ...] = ()  # template names; their includes are followed
    model_modules: tuple[str, ...] = ()  # e.g. the LLM client, whose retries and fallbacks shape the replies
    model_settings: bool = False  # whether the endpoint settings (URL, model, temperature…) count at all
    extra: tuple[str, ...] = field(default=())  # free-form salt, e.g. a schema version


def _module_file(root: Path, dotted: str) -> Path | None:
    base = root.joinpath(*dotted.split(".")) if dotted else root
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _is_package(root: Path, dotted: str) -> bool:
    return (root.joinpath(*dotted.split(".")) / "__init__.py").is_file()


def _package_modules(root: Path, dotted: str) -> list[str]:
    folder = root.joinpath(*dotted.split("."))
    names = []
    for p in sorted(folder.rglob("*.py")):
        rel = p.relative_to(root).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.append(".".join(parts))
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement, nested ones included, outside `if TYPE_CHECKING:` bodies. Imports are statements, so
    expressions are never entered (walking every node of every module made this the slow part)."""
    for node in body:
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from _statements(node.orelse)
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, name, None) or []:
                if isinstance(child, ast.stmt):
                    yield from _statements([child])
                elif hasattr(child, "body"):  # except handlers and match cases hold statements
                    yield from _statements(child.body)


RawImport = tuple[str, int, tuple[str, ...]]  # (module as written, relative level, names from it; () for `import`)


def _raw_imports(tree: ast.AST) -> list[RawImport]:
    """Every import statement outside TYPE_CHECKING blocks, as written (resolved per module by `_imports`)."""
    out: list[RawImport] = []
    for node in _statements(getattr(tree, "body", [])):
        if isinstance(node, ast.Import):
            out.extend((alias.name, 0, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module or "", node.level, tuple(a.name for a in node.names)))
    return out


def _imports(raw: Iterable[RawImport], current: str, is_pkg: bool) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(module, names imported from it) for every in-package import."""
    for written, level, names in raw:
        if not level and names == ():
            if written.startswith(PACKAGE + "."):
                yield written[len(PACKAGE) + 1:], ()
        elif level:
            parts = current.split(".") if current else []
            base = parts if is_pkg else parts[:-1]
            base = base[: len(base) - (level - 1)] if level > 1 else base
            yield ".".join([*base, *(written.split(".") if written else [])]), names
        elif written == PACKAGE or written.startswith(PACKAGE + "."):
            yield (written[len(PACKAGE) + 1:] if written != PACKAGE else ""), names


def _dependencies(root: Path, dotted: str) -> set[str]:
    """The in-package modules `dotted` imports: a `from pkg import name` counts the submodule `pkg.name` when it
    is one, else `pkg` itself (whose __init__ defines the name)."""
    path = _module_file(root, dotted)
    if path is None:
        return set()
    return set(_file_dependencies(root, dotted, path, path.stat().st_mtime_ns))


@lru_cache(maxsize=4096)
def _file_dependencies(root: Path, dotted: str, path: Path, mtime_ns: int) -> frozenset[str]:
    """Cached per file version, like the analysis it reads."""
    deps: set[str] = set()
    for module, names in _imports(_analysis(path, mtime_ns).imports, dotted, path.name == "__init__.py"):
        subs = [f"{module}.{n}" if module else n for n in names]
        found = [s for s in subs if _module_file(root, s) is not None]
        deps.update(found)
        if (not names or len(found) < len(names)) and _module_file(root, module) is not None:
            deps.add(module)
    return frozenset(deps)


def module_closure(modules: Iterable[str], root: Path = PACKAGE_ROOT) -> set[str]:
    """Every in-package module the given modules (packages expand to all their modules) run, transitively."""
    todo: list[str] = []
    for m in modules:
        todo.extend(_package_modules(root, m) if _is_package(root, m) else [m])
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen or _module_file(root, m) is None:
            continue
        seen.add(m)
        todo.extend(_dependencies(root, m) - seen)
    return seen


class _DropDocstrings(ast.NodeTransformer):
    def _strip(self, node: ast.AST) -> ast.AST:
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]  # every stripped node has a body
        self.generic_visit(node)
        return node

    # NodeTransformer dispatches on these exact (mixedCase) method names.
    # ast.NodeTransformer dispatches on these exact method names.
    visit_Module = visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _strip  # noqa: N815


@dataclass(frozen=True)
class _Analysis:
    digest: str  # hash of the syntax tree without docstrings
    imports: tuple[RawImport, ...]


@lru_cache(maxsize=1024)
def _analysis(path: Path, mtime_ns: int) -> _Analysis:
    """A module's digest and imports, once per file version in a process (mtime only keys this cache) and once per
    file content on this machine (`code_cache_dir()`): every process that imports the code location computes every
    asset's version, and walking ~200 syntax trees cost seconds of each start."""
    data = path.read_bytes()
    key = sha256_bytes(data + f"\0{_CACHE_SALT}".encode())
    cached = _cached_analysis(key)
    if cached is not None:
        return cached
    tree = _DropDocstrings().visit(ast.parse(data))
    found = _Analysis(sha256_bytes(ast.dump(tree, annotate_fields=False).encode()), tuple(_raw_imports(tree)))
    _store_analysis(key, found)
    return found


# The syntax tree's dump differs between Python versions; a change to how files are analysed bumps the number.
_CACHE_SALT = f"py{sys.version_info[0]}.{sys.version_info[1]}/analysis-1"


def code_cache_dir() -> Path:
    """Per-user cache of file analyses: `S2E_CODE_CACHE`, else `$XDG_CACHE_HOME/skill2env/code`."""
    if explicit := os.environ.get("S2E_CODE_CACHE"):
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skill2env" / "code"


def _cached_analysis(key: str) -> _Analysis | None:
    try:
        raw = json.loads((code_cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
        imports = tuple((str(m), int(lv), tuple(map(str, n))) for m, lv, n in raw["imports"])
        return _Analysis(str(raw["digest"]), imports)
    except (OSError, ValueError, KeyError, TypeError):  # missing or damaged: analyse the file again
        return None


def _store_analysis(key: str, found: _Analysis) -> None:
    with contextlib.suppress(OSError):  # a read-only home only costs the speed-up
        atomic_write_text(code_cache_dir() / f"{key}.json", json.dumps({"digest": found.digest,
                                                                        "imports": found.imports}))


def source_digest(path: Path) -> str:
    return _analysis(path, path.stat().st_mtime_ns).digest


def scope_material(scope: CodeScope, *, root: Path = PACKAGE_ROOT, prompts_folder: Path | str | None = None,
                   fingerprint: Mapping[str, object] | None = None) -> dict[str, object]:
    """Everything a scope's version is computed from (shown in tests and `skill2env ops` when debugging)."""
    from skill2env_dagster.llm.prompts import template_sources  # jinja2 only when prompts are in scope

    online = scope.model_settings and is_online(fingerprint)
    if prompts_folder is None and root != PACKAGE_ROOT:
        prompts_folder = root / "prompts"  # a package copy (tests) carries its own templates
    names = module_closure(scope.modules + (scope.model_modules if online else ()), root)
    modules = {m: source_digest(f) for m in sorted(names) if (f := _module_file(root, m)) is not None}
    data = {name: sha256_bytes((root / "data" / name).read_bytes()) for name in scope.data}
    prompts: dict[str, str] = {}
    for name in scope.prompts if online else ():
        prompts.update({k: sha256_bytes(v.encode()) for k, v in template_sources(name, prompts_folder).items()})
    return {"modules": modules, "data": data, "prompts": dict(sorted(prompts.items())),
            "model": dict(fingerprint or {}) if online else {}, "extra": list(scope.extra)}


def is_online(fingerprint: Mapping[str, object] | None) -> bool:
    """A model endpoint is configured (LLMConfig.fingerprint says `generator: offline` otherwise)."""
    return bool(fingerprint) and dict(fingerprint or {}).get("generator") != "offline"


def code_version(scope: CodeScope, *, root: Path = PACKAGE_ROOT, prompts_folder: Path | str | None = None,
                 fingerprint: Mapping[str, object] | None = None) -> str:
    """The short content hash Dagster shows as the asset's code version."""
    material = scope_material(scope, root=root, prompts_folder=prompts_folder, fingerprint=fingerprint)
    return sha256_bytes(canonical_json(material).encode())[:16]


def domain_modules(root: Path = PACKAGE_ROOT) -> set[str]:
    """Every module of the domain packages that holds code: each must belong to some artifact's scope (a test
    checks), except ORCHESTRATION_ONLY. A package `__init__` that only re-exports (imports, `__all__`) runs nothing
    of its own."""
    out: set[str] = set()
    for name in DOMAIN:
        out.update(_package_modules(root, name) if _is_package(root, name) else [name])
    return {m for m in out if not _reexport_only(root, m) and m not in ORCHESTRATION_ONLY}


def _reexport_only(root: Path, dotted: str) -> bool:
    path = _module_file(root, dotted)
    if path is None or path.name != "__init__.py":
        return False
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            continue
        return False
    return True
