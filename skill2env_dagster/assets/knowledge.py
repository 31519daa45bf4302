"""Asset `skill_knowledge`, partitioned by skill: what the skill teaches, with the line each item comes from.

Between the snapshot and the plans: the planner and the task creator both read it. A re-materialisation of an
unchanged skill (same bundle digest, same extractor version) reuses the stored extraction.
"""

import dagster as dg

from skill2env_dagster.artifacts import KNOWLEDGE, SNAPSHOT
from skill2env_dagster.assets.common import asset_code_version, skills_partitions, skipped
from skill2env_dagster.knowledge import cached_knowledge
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.reasons import ReasonCode, StoreError
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore


def _stored(store: ArtifactStore, key: str) -> SkillKnowledge | None:
    try:
        return store.load(KNOWLEDGE, key) if store.exists(KNOWLEDGE, key) else None
    except StoreError:
        return None  # an unreadable old extraction is simply redone


def _preview(k: SkillKnowledge) -> str:
    rows = [f"| {r.modality} | {r.text[:90].replace('|', '/')} | {r.ref.label} |" for r in k.rules[:8]]
    return "| modality | rule | source |\n|---|---|---|\n" + "\n".join(rows) if rows else "no rules found"


@dg.asset(name=KNOWLEDGE.name, partitions_def=skills_partitions, deps=[SNAPSHOT.name], group_name="planning",
          kinds={"python"}, code_version=asset_code_version(KNOWLEDGE))
def skill_knowledge(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
    """Rules, limits, defaults, pitfalls, procedures, tables, templates and shipped files of one eligible skill."""
    key, store = context.partition_key, artifacts.store()
    skill = store.load(SNAPSHOT, key)
    if not skill.is_eligible:
        return skipped(store, KNOWLEDGE, key, ReasonCode.NOT_ELIGIBLE, context.log)
    previous = _stored(store, key)
    knowledge = cached_knowledge(previous, skill)
    digest = store.save(KNOWLEDGE, key, knowledge)
    return dg.MaterializeResult(data_version=dg.DataVersion(digest[:24]), metadata={
        "status": "extracted" if knowledge is not previous else "reused",
        "bundle_digest": knowledge.bundle_digest, "extractor_version": knowledge.extractor_version,
        "counts": dg.MetadataValue.json(knowledge.counts()),
        "files_read": dg.MetadataValue.json(knowledge.files_read),
        "rules": dg.MetadataValue.md(_preview(knowledge)),
        "path": dg.MetadataValue.path(str(store.path(KNOWLEDGE, key))),
    })
