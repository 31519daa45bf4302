"""Content-addressed, atomically written artifact store: one validated pydantic file per (artifact, skill).

Every file is written to a temporary sibling and renamed into place, so a crash never leaves a half-written
artifact; every read validates against the model so a corrupted or stale-schema file is a StoreError naming the
path, never a confusing failure three stages later.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from skill2env_dagster.reasons import ReasonCode, StoreError

M = TypeVar("M", bound=BaseModel)

_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(obj: object) -> str:
    """Key-sorted compact JSON: the basis for every content digest we compute over structured data."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest_model(model: BaseModel) -> str:
    return sha256_bytes(canonical_json(model.model_dump(mode="json")).encode())


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


def check_key(key: str) -> str:
    if not _SAFE_KEY.match(key):
        raise StoreError(ReasonCode.INTERNAL_ERROR, f"unsafe artifact key {key!r}")
    return key


def write_model(path: Path, model: BaseModel) -> str:
    """Validate (by construction), write atomically, return the content digest of what was written."""
    text = model.model_dump_json(indent=2)
    atomic_write_text(path, text + "\n")
    return sha256_bytes(text.encode())


def read_model(path: Path, cls: type[M]) -> M:
    try:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise StoreError(ReasonCode.INTERNAL_ERROR, f"missing artifact {path}") from e
    except ValidationError as e:
        raise StoreError(ReasonCode.INTERNAL_ERROR, f"{path} does not validate as {cls.__name__}: {e}") from e


class ArtifactStore:
    """Lays artifacts out as ROOT/<artifact>/<skill_id>.json (and folders for task bundles)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def path(self, artifact: str, key: str, suffix: str = ".json") -> Path:
        return self.root / artifact / f"{check_key(key)}{suffix}"

    def dir(self, artifact: str, key: str | None = None) -> Path:
        return self.root / artifact if key is None else self.root / artifact / check_key(key)

    def save(self, artifact: str, key: str, model: BaseModel) -> str:
        return write_model(self.path(artifact, key), model)

    def load(self, artifact: str, key: str, cls: type[M]) -> M:
        return read_model(self.path(artifact, key), cls)

    def exists(self, artifact: str, key: str) -> bool:
        return self.path(artifact, key).exists()

    def keys(self, artifact: str) -> list[str]:
        folder = self.root / artifact
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.json") if not p.name.startswith("."))

    def load_all(self, artifact: str, cls: type[M]) -> dict[str, M]:
        return {k: self.load(artifact, k, cls) for k in self.keys(artifact)}
