"""Content-addressed, atomically written artifact store: one validated pydantic file per (artifact, skill).

Every file is written to a temporary sibling and renamed into place (`atomic.py`), so a crash never leaves a
half-written artifact; every read validates against the model so a corrupted or stale-schema file is a StoreError
naming the path, never a confusing failure three stages later.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.hashing import sha256_bytes
from skill2env_dagster.reasons import ReasonCode, StoreError

if TYPE_CHECKING:
    from skill2env_dagster.artifacts import Artifact, Folder

M = TypeVar("M", bound=BaseModel)

_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


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
    """Lays artifacts out as ROOT/<artifact>/<key>.json (and folders for task bundles, snapshots, exports).

    Every method takes a registry entry (`skill2env_dagster.artifacts`), so the name and the model of an artifact
    are never paired by hand: `store.load(PLANS, key)` is a `WorkflowPlanSet`.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def path(self, artifact: Artifact[Any] | Folder, key: str, suffix: str = ".json") -> Path:
        return self.root / artifact.name / f"{check_key(key)}{suffix}"

    def dir(self, artifact: Artifact[Any] | Folder, key: str | None = None) -> Path:
        base = self.root / artifact.name
        return base if key is None else base / check_key(key)

    def save(self, artifact: Artifact[M], key: str, model: M) -> str:
        if not isinstance(model, artifact.model):
            raise StoreError(ReasonCode.INTERNAL_ERROR, f"{artifact.name} holds {artifact.model.__name__}, "
                             f"not {type(model).__name__}")
        return write_model(self.path(artifact, key), model)

    def load(self, artifact: Artifact[M], key: str) -> M:
        return read_model(self.path(artifact, key), artifact.model)

    def exists(self, artifact: Artifact[Any], key: str) -> bool:
        return self.path(artifact, key).exists()

    def delete(self, artifact: Artifact[Any], key: str) -> None:
        """Drop a stale artifact (a skill that became ineligible must not keep its old plan)."""
        self.path(artifact, key).unlink(missing_ok=True)

    def keys(self, artifact: Artifact[Any]) -> list[str]:
        folder = self.root / artifact.name
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.json") if not p.name.startswith("."))

    def load_all(self, artifact: Artifact[M]) -> dict[str, M]:
        return {k: self.load(artifact, k) for k in self.keys(artifact)}
