"""Content-address a skill folder: per-file SHA-256, text/binary class, symlink policy, size limits.

The bundle digest is a SHA-256 over sorted (relative path, file digest) pairs, so it changes exactly when a file's
bytes, name or presence change — which is what drives the data version of every downstream partition.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from skill2env_dagster.models.skill import FileEntry, FileKind
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.sources.discover import SKIP_DIRS

_SNIFF = 8192


@dataclass
class Bundle:
    files: list[FileEntry]
    digest: str
    texts: dict[str, str] = field(default_factory=dict)  # rel_path -> decoded text of readable text files
    problems: list[tuple[ReasonCode, str]] = field(default_factory=list)  # (code, rel_path or detail)
    total_bytes: int = 0


def bundle_digest(files: list[FileEntry]) -> str:
    h = hashlib.sha256()
    for f in sorted(files, key=lambda e: e.rel_path):
        h.update(f.rel_path.encode("utf-8"))
        h.update(b"\0")
        h.update(f.sha256.encode())
        h.update(b"\n")
    return h.hexdigest()


def classify_bytes(data: bytes) -> tuple[FileKind, str | None]:
    """('text', decoded) for UTF-8 (BOM allowed) or Latin-1-looking text without NULs; else ('binary', None)."""
    if b"\0" in data[:_SNIFF]:
        return "binary", None
    try:
        return "text", data.decode("utf-8-sig")
    except UnicodeDecodeError:
        sample = data[:_SNIFF]
        controls = sum(1 for b in sample if b < 9 or 13 < b < 32)
        if controls > len(sample) * 0.05:
            return "binary", None
        return "text", data.decode("latin-1")


def printable_path(text: str) -> str:
    """File names are bytes on Linux: a name that is not UTF-8 is kept visible as backslash escapes, so every
    record stays JSON-serialisable while the digest still covers the exact bytes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _symlink_entry(path: Path, rel: str, root: Path) -> tuple[FileEntry, bool]:
    target = os.readlink(path)
    resolved = (path.parent / target).resolve()
    escapes = not _inside(resolved, root)
    entry = FileEntry(
        rel_path=printable_path(rel),
        size=len(target),
        sha256=hashlib.sha256(target.encode("utf-8", "surrogateescape")).hexdigest(),
        kind="symlink",
        symlink_target=printable_path(target),
        refused=ReasonCode.SYMLINK_ESCAPE if escapes else None,
    )
    return entry, escapes


def _iter_paths(root: Path, exclude: set[Path]):
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            full = here / d
            if d in SKIP_DIRS or full in exclude:
                continue
            if full.is_symlink():
                yield full  # a symlinked folder is a symlink entry, never walked
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            yield here / name


def read_bundle(root: Path, *, max_file_bytes: int, max_skill_bytes: int, max_files: int,
                exclude: set[Path] | None = None, skill_file: str | None = None,
                link_root: Path | None = None) -> Bundle:
    """Hash every file under root (minus excluded sub-skill folders); never raises on a bad file.

    `skill_file` under `link_root` (the source root): a SKILL.md that is a symlink is followed when its target is a
    regular file inside the source — the repository's own file, shared between agent folders — and read as the
    skill's SKILL.md; a target outside the source is refused (`symlink_escape`), a dangling one is `unreadable`.
    Every other symlink keeps the skill-root policy of `_symlink_entry`.
    """
    root = root.resolve()
    bundle = Bundle(files=[], digest="")
    for path in _iter_paths(root, exclude or set()):
        rel = path.relative_to(root).as_posix()
        if len(bundle.files) >= max_files:
            bundle.problems.append((ReasonCode.TOO_MANY_FILES, f"more than {max_files} files"))
            break
        if path.is_symlink() and rel == skill_file and link_root is not None:
            _add_linked_skill_file(bundle, path, rel, link_root.resolve(), max_file_bytes)
            continue
        if path.is_symlink():
            entry, escapes = _symlink_entry(path, rel, root)
            bundle.files.append(entry)
            if escapes:
                bundle.problems.append((ReasonCode.SYMLINK_ESCAPE, f"{entry.rel_path} -> {entry.symlink_target}"))
            continue
        _add_regular_file(bundle, path, rel, max_file_bytes)
        if bundle.total_bytes > max_skill_bytes:
            bundle.problems.append((ReasonCode.SKILL_TOO_LARGE, f"more than {max_skill_bytes} bytes"))
            break
    bundle.digest = bundle_digest(bundle.files)
    return bundle


def _add_linked_skill_file(bundle: Bundle, path: Path, rel: str, link_root: Path, max_file_bytes: int) -> None:
    target = os.readlink(path)
    shown = f"{printable_path(rel)} -> {printable_path(target)}"
    resolved = (path.parent / target).resolve()
    if not _inside(resolved, link_root):
        entry, _ = _symlink_entry(path, rel, path.parent)
        bundle.files.append(entry.model_copy(update={"refused": ReasonCode.SYMLINK_ESCAPE}))
        bundle.problems.append((ReasonCode.SYMLINK_ESCAPE, f"{shown} (outside the source repository)"))
        return
    if not resolved.is_file():
        entry, _ = _symlink_entry(path, rel, path.parent)
        bundle.files.append(entry.model_copy(update={"refused": ReasonCode.UNREADABLE}))
        bundle.problems.append((ReasonCode.UNREADABLE, f"{shown} (no such file in the source)"))
        return
    _add_regular_file(bundle, path, rel, max_file_bytes)
    last = bundle.files[-1]
    bundle.files[-1] = last.model_copy(update={"symlink_target": printable_path(target)})


def _add_regular_file(bundle: Bundle, path: Path, raw_rel: str, max_file_bytes: int) -> None:
    rel = printable_path(raw_rel)
    try:
        size = path.stat().st_size
        if not path.is_file():
            return  # sockets, fifos, devices: not content
        if size > max_file_bytes:
            digest = _hash_file(path)
            bundle.files.append(
                FileEntry(rel_path=rel, size=size, sha256=digest, kind="binary", refused=ReasonCode.FILE_TOO_LARGE)
            )
            bundle.problems.append((ReasonCode.FILE_TOO_LARGE, rel))
            bundle.total_bytes += size
            return
        data = path.read_bytes()
    except OSError as e:
        bundle.files.append(FileEntry(rel_path=rel, size=0, sha256="", kind="binary", refused=ReasonCode.UNREADABLE))
        bundle.problems.append((ReasonCode.UNREADABLE, f"{rel}: {e.strerror or e}"))
        return
    kind, text = classify_bytes(data)
    bundle.files.append(FileEntry(rel_path=rel, size=size, sha256=hashlib.sha256(data).hexdigest(), kind=kind))
    bundle.total_bytes += size
    if text is not None:
        bundle.texts[rel] = text


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
