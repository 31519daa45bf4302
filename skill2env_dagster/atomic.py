"""Atomic writes: a reader sees the old file (or folder) or the new one, never a torn one.

A crash mid-write leaves at most a hidden temporary sibling, never half an artifact, cache entry or report. This
module imports nothing from the package, so every layer may use it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write then rename, so readers see the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_replace_dir(staging: Path, final: Path) -> None:
    """Publish a fully written folder in one rename; the previous version is removed only after the swap."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
    os.replace(staging, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
