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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from skill2env_dagster.store import canonical_json, sha256_bytes

PACKAGE = "skill2env_dagster"
PACKAGE_ROOT = Path(__file__).resolve().parent
# Packages and modules whose code decides artifact content (cli/, assets/, resources/ only wire it up).
DOMAIN = ("skillhub", "knowledge", "planning", "llm", "tasks", "gates", "probe", "export", "rollouts", "models",
          "store", "reasons", "artifacts")


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


def _imports(tree: ast.AST, current: str, is_pkg: bool) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(module, names imported from it) for every in-package import outside TYPE_CHECKING blocks."""
    for node in _statements(getattr(tree, "body", [])):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    yield alias.name[len(PACKAGE) + 1:], ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = current.split(".") if current else []
                base = parts if is_pkg else parts[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                module = node.module[len(PACKAGE) + 1:] if node.module != PACKAGE else ""
            else:
                continue
            yield module, tuple(a.name for a in node.names)


def _dependencies(root: Path, dotted: str) -> set[str]:
    """The in-package modules `dotted` imports: a `from pkg import name` counts the submodule `pkg.name` when it
    is one, else `pkg` itself (whose __init__ defines the name)."""
    path = _module_file(root, dotted)
    if path is None:
        return set()
    return set(_file_dependencies(root, dotted, path, path.stat().st_mtime_ns))


@lru_cache(maxsize=4096)
def _file_dependencies(root: Path, dotted: str, path: Path, mtime_ns: int) -> frozenset[str]:
    """Cached per file version, like the syntax tree it reads (docstrings removed: imports are unaffected)."""
    tree = _syntax_tree(path, mtime_ns)
    deps: set[str] = set()
    for module, names in _imports(tree, dotted, path.name == "__init__.py"):
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


@lru_cache(maxsize=1024)
def _syntax_tree(path: Path, mtime_ns: int) -> ast.AST:
    """A module's syntax tree without docstrings, parsed once per file version (mtime only keys the cache): every
    scope walks the same modules, and re-parsing them per scope made importing the code location take seconds,
    in every process that imports it. Callers only read the tree."""
    return _DropDocstrings().visit(ast.parse(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=1024)
def _source_digest(path: Path, mtime_ns: int) -> str:
    """Hash of the code's syntax tree without docstrings (mtime only keys the cache)."""
    return sha256_bytes(ast.dump(_syntax_tree(path, mtime_ns), annotate_fields=False).encode())


def source_digest(path: Path) -> str:
    return _source_digest(path, path.stat().st_mtime_ns)


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
    checks). A package `__init__` that only re-exports (imports, `__all__`) runs nothing of its own."""
    out: set[str] = set()
    for name in DOMAIN:
        out.update(_package_modules(root, name) if _is_package(root, name) else [name])
    return {m for m in out if not _reexport_only(root, m)}


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
