"""What every asset module shares: the skills partitioning, derived code versions, and the skipped result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from skill2env_dagster.artifacts import SKILLS_PARTITION, Artifact, Folder
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.resources.llm import env_fingerprint
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.versions import code_version

# The one partitioning scheme: a dynamic partition per crawled skill (key = SkillRecord.skill_id).
skills_partitions = dg.DynamicPartitionsDefinition(name=SKILLS_PARTITION)


def asset_code_version(artifact: Artifact[Any] | Folder, prompts_folder: Path | str | None = None) -> str:
    """The artifact's code version from its declared scope and the model settings in the environment."""
    if artifact.scope is None:
        raise ValueError(f"{artifact.name} declares no code scope")
    return code_version(artifact.scope, prompts_folder=prompts_folder, fingerprint=env_fingerprint())


def skipped(store: ArtifactStore, artifact: Artifact[Any], key: str, reason: ReasonCode,
            log: dg.DagsterLogManager | None = None, **extra: Any) -> dg.MaterializeResult:
    """A skill this stage does not apply to: no artifact file (a stale one is removed), an honest status."""
    store.delete(artifact, key)
    if log is not None:
        log.info(f"{artifact.name} skill={key} status=skipped reason={reason.value}")
    return dg.MaterializeResult(data_version=dg.DataVersion(f"skipped:{reason.value}"),
                                metadata={"status": "skipped", "reason": reason.value}, **extra)
