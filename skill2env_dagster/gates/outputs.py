"""What the Oracle produced: output units found in the engine's changes, and the shape of each output file.

An output is a file the solve phase added or modified, outside caches, our own uploads and the verifier's
toolchain (changes there are tamper evidence or declared installs, not answers). A folder the solve phase
created with two or more output files below it is a *tree* (a produced project, a report folder); every other
output file is a unit of its own. Files on the tmpfs mounts (/tmp, /logs) are invisible to the engine's view and
therefore never mutation-tested; deletions by the Oracle are reported, not mutated.

Shapes decide which mutants are sound for a file: data (CSV, TSV, JSON, JSON lines, YAML, line records) gets
every mutant; prose text gets only the trivial ones; code (a shebang, an exec bit or a script extension) gets
only mutants that are wrong for any program (emptied, junk); binary or oversized files only the emptied one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

import yaml

from skill2env_dagster.gates.changes import Change, ChangeKind, is_under, leaves
from skill2env_dagster.gates.tamper import TamperPolicy

# Not answers: caches, package-manager state, version-control internals, runtime state, our own uploads.
_SKIP_PARTS = frozenset({"__pycache__", ".cache", ".git", ".hg", ".svn", "node_modules", ".npm", ".pytest_cache"})
_SKIP_PREFIXES = ("/solution", "/tmp", "/logs", "/proc", "/sys", "/dev", "/run", "/var/run", "/var/cache",
                  "/var/lib/apt", "/var/lib/dpkg", "/var/log", "/root/.local/share/virtualenv")
_SKIP_SUFFIXES = (".pyc", ".pyo", ".swp", ".lock")
CODE_SUFFIXES = frozenset({".py", ".sh", ".bash", ".zsh", ".awk", ".sed", ".pl", ".rb", ".js", ".mjs", ".cjs",
                           ".ts", ".jq", ".lua", ".php", ".r", ".go", ".c", ".h", ".cc", ".cpp", ".java", ".rs",
                           ".sql", ".mk", ".ps1", ".tcl", ".scala", ".kt", ".swift"})
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".html", ".htm", ".tex", ".adoc", ".org"})


class Shape(StrEnum):
    CSV = "csv"
    TSV = "tsv"
    JSON = "json"
    JSONL = "jsonl"
    YAML = "yaml"
    LINES = "lines"
    TEXT = "text"
    CODE = "code"
    BINARY = "binary"

    @property
    def is_data(self) -> bool:
        return self in (Shape.CSV, Shape.TSV, Shape.JSON, Shape.JSONL, Shape.YAML, Shape.LINES)


@dataclass(frozen=True)
class OutputFile:
    path: str
    data: bytes
    mode: int = 0o644
    base: bytes | None = None  # the image's content when the Oracle modified an existing file

    def shape(self, max_bytes: int) -> Shape:
        """Files above `max_bytes` are treated as opaque (only emptied or deleted)."""
        return classify(self.path, self.data if len(self.data) <= max_bytes else None, self.mode)


@dataclass(frozen=True)
class OutputUnit:
    """One output: a file, or a produced tree (`root` is then the folder, `files` everything below it)."""

    root: str
    files: tuple[OutputFile, ...]
    is_tree: bool = False
    dirs: tuple[tuple[str, int], ...] = ()  # (folder, mode) inside a tree, to restore it exactly

    @property
    def label(self) -> str:
        return f"{self.root}/ ({len(self.files)} files)" if self.is_tree else self.root


@dataclass(frozen=True)
class OutputPlan:
    """Where the outputs are (before reading them) and what was left out, with the reason."""

    roots: tuple[str, ...]  # files and tree folders to read, top-level only
    trees: frozenset[str]
    notes: tuple[str, ...]
    modified: frozenset[str] = frozenset()  # files that existed in the image (their base version is read too)


def _skipped(path: str, policy: TamperPolicy) -> str | None:
    p = PurePosixPath(path)
    if any(part in _SKIP_PARTS for part in p.parts) or path.endswith(_SKIP_SUFFIXES):
        return "cache or version-control file"
    if any(is_under(path, s) for s in _SKIP_PREFIXES):
        return "runtime or upload path"
    if policy.rule(path) is not None:
        return "toolchain path (tamper evidence or a declared install)"
    return None


def plan_outputs(changes: list[Change], policy: TamperPolicy, max_files: int) -> OutputPlan:
    """Output roots from the solve phase's changes (is_dir is unknown for `docker diff`: a listed entry with
    entries below it is a folder, anything else is treated as a file)."""
    notes: list[str] = []
    kept: list[Change] = []
    for c in leaves(changes):
        if c.kind is ChangeKind.DELETED:
            notes.append(f"{c.path}: deleted by the Oracle (not mutated)")
            continue
        if "\n" in c.path:
            notes.append(f"{c.path!r}: newline in the name (not mutated)")
            continue
        if _skipped(c.path, policy) is None:
            kept.append(c)
    added_dirs = {c.path for c in changes if c.kind is ChangeKind.ADDED}
    parents = {str(a) for c in changes for a in PurePosixPath(c.path).parents}
    files = [c.path for c in kept if c.is_dir is not True and c.path not in parents]
    trees: set[str] = set()
    for d in sorted(added_dirs):
        if any(is_under(d, t) for t in trees):
            continue
        below = [f for f in files if is_under(f, d) and f != d]
        if len(below) >= 2 and _skipped(d, policy) is None:
            trees.add(d)
    roots = sorted(trees) + [f for f in files if not any(is_under(f, t) for t in trees)]
    if len(files) > max_files:
        notes.append(f"{len(files)} output files; only the first {max_files} are mutation-tested")
    modified = frozenset(c.path for c in kept if c.kind is ChangeKind.MODIFIED and c.path in files)
    return OutputPlan(tuple(roots), frozenset(trees), tuple(notes), modified)


def _decode(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def classify(path: str, data: bytes | None, mode: int = 0o644) -> Shape:
    """The shape of one output file, from its name, mode and content."""
    if data is None:
        return Shape.BINARY
    text = _decode(data)
    if text is None:
        return Shape.BINARY
    suffix = PurePosixPath(path).suffix.lower()
    if text.startswith("#!") or mode & 0o111 or suffix in CODE_SUFFIXES:
        return Shape.CODE
    if suffix == ".csv":
        return Shape.CSV
    if suffix in (".tsv", ".tab"):
        return Shape.TSV
    if suffix in (".jsonl", ".ndjson"):
        return Shape.JSONL
    if suffix in (".yaml", ".yml"):
        return Shape.YAML if _loads_yaml(text) else Shape.LINES
    if suffix == ".json" or text.lstrip()[:1] in ("{", "["):
        try:
            json.loads(text)
            return Shape.JSON
        except ValueError:
            pass
    if suffix in TEXT_SUFFIXES:
        return Shape.TEXT
    return Shape.LINES


def _loads_yaml(text: str) -> bool:
    try:
        return isinstance(yaml.safe_load(text), (dict, list))
    except yaml.YAMLError:
        return False
