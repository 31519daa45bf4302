"""SkillHub stage: the crawl (unpartitioned), the raw SKILL.md lineage root, and the per-skill snapshot."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
from dagster._core.definitions.data_version import (  # the provenance tags a materialization carries (no public API)
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    NULL_EVENT_POINTER,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)
from dagster._core.events import DagsterEventType

from skill2env_dagster.artifacts import CRAWL, RAW_SKILL_MD, SKILLS_PARTITION, SNAPSHOT
from skill2env_dagster.assets.common import (
    asset_code_version,
    log_asset_events,
    skills_partitions,
    stage_run,
    usage_metadata,
)
from skill2env_dagster.llm.prompts import prompt_version
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.snapshot import SnapshotManifest
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.skillhub.crawl import crawl
from skill2env_dagster.skillhub.opinion import OPINION_TEMPLATE, OpinionCache, second_opinion
from skill2env_dagster.skillhub.snapshot import (
    SKILLS_TABLE,
    latest_snapshot_dir,
    load_manifest,
    load_record,
    previous_crawl,
    publish_snapshot,
    record_fingerprint,
)
from skill2env_dagster.store import ArtifactStore, write_model

OWNERS = ["team:skill2env"]
# The snapshot's final verdict (after the second opinion) in its metadata: what the runner and the sensor route by
ELIGIBLE_METADATA = "eligible"
# Set when the model's second opinion failed (the rules' verdict stands): the freshness scan asks again next time
OPINION_FAILED_METADATA = "second_opinion_failure"


raw_skill_md = dg.AssetSpec(
    RAW_SKILL_MD.name,
    partitions_def=skills_partitions,
    group_name="skillhub",
    kinds={"markdown"},
    owners=OWNERS,
    description="A skill folder rooted at SKILL.md, as found in its source. Observed by the crawl: data version = "
    "bundle digest, metadata = path and source commit. The lineage root of every per-skill asset.",
)


CRAWL_VERSION = asset_code_version(CRAWL)


@dg.asset(name=CRAWL.name, group_name="skillhub", kinds={"python", "parquet"}, owners=OWNERS,
          code_version=CRAWL_VERSION)
def skillhub_crawl(
    context: dg.AssetExecutionContext, skillhub: SkillHubResource, artifacts: ArtifactStoreResource
) -> dg.MaterializeResult:
    """Discover, parse, screen and deduplicate every skill of every source into a content-addressed snapshot,
    keep the `skills` partitions in step (new skills added, removed skills' partitions deleted), and observe each
    skill's raw SKILL.md folder so only changed skills turn stale downstream. A git source still at the commit
    the last snapshot recorded (same code and settings) keeps that snapshot's records: the nightly re-crawl of an
    unchanged hub reads no skill."""
    store = artifacts.store()
    root = store.dir(CRAWL)
    result = crawl(skillhub.load(), previous_crawl(root), CRAWL_VERSION)
    previous = _previously_observed(context.instance, root)
    snap_dir, manifest = publish_snapshot(result, root)
    _record_reuse_keys(snap_dir, manifest)
    added, removed = _sync_partitions(context.instance, [r.skill_id for r in result.records])
    observed = log_asset_events(context, (_observation(r) for r in result.records
                                          if previous.get(r.skill_id, ("", None, ""))[:2] !=
                                          (r.bundle_digest, r.source_commit)))
    relocated = refresh_locations(store, [r for r in result.records if r.skill_id in previous
                                          and previous[r.skill_id][2] != r.abs_path])
    context.log.info("crawl %s: %d skills, %s", manifest.snapshot_id, manifest.n_skills, manifest.status_counts)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(manifest.snapshot_id),
        metadata={
            "snapshot_id": manifest.snapshot_id,
            "snapshot_dir": dg.MetadataValue.path(str(snap_dir)),
            "skills": manifest.n_skills,
            "rules_status_counts": dg.MetadataValue.json(manifest.status_counts),
            "rules_reason_counts": dg.MetadataValue.json(manifest.reason_counts),
            "verdicts": "skills per status and per reason as the rules judged them, before the model's second "
                        "opinion; the final verdicts: skillhub_snapshot per skill, corpus_stats for the corpus",
            "sources": dg.MetadataValue.json(manifest.sources),
            "sources_reused": dg.MetadataValue.json(sorted(r.name for r in result.sources if r.reused)),
            "partitions_added": len(added),
            "raw_skill_md_observed": observed,
            "snapshot_records_relocated": relocated,
            "partitions_removed": dg.MetadataValue.json(sorted(removed)),
            "seconds": dg.MetadataValue.json(manifest.seconds),
        },
    )


def _record_reuse_keys(snap_dir: Path, manifest: SnapshotManifest) -> None:
    """A snapshot is content-addressed: when a crawl by new code (or settings) finds the very same records, the
    published manifest would keep the old reuse keys and no later crawl could reuse it. Its sources are updated."""
    published = load_manifest(snap_dir)
    if [(s.get("name"), s.get("reuse_key")) for s in published.sources] != [
            (s.get("name"), s.get("reuse_key")) for s in manifest.sources]:
        write_model(snap_dir / "snapshot.json", published.model_copy(update={"sources": manifest.sources}))


def _previously_observed(instance: dg.DagsterInstance, root: Path) -> dict[str, tuple[str, str | None, str]]:
    """(digest, commit, folder) per skill in this instance's last crawl: only a different digest or commit is
    observed again, so a re-crawl of a large unchanged hub writes no events (a new instance observes everything);
    a different folder only relocates the stored record."""
    event = instance.get_latest_materialization_event(dg.AssetKey(CRAWL.name))
    meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
    snapshot = meta.get("snapshot_id")
    table = root / str(snapshot.value if snapshot else "") / SKILLS_TABLE
    if not snapshot or not table.is_file():
        return {}
    columns = [c for c in ("skill_id", "bundle_digest", "source_commit", "abs_path")
               if c in pq.read_schema(table).names]  # snapshots from before abs_path: every skill observed again
    rows = pq.read_table(table, columns=columns).to_pylist()
    return {r["skill_id"]: (r["bundle_digest"], r["source_commit"], r.get("abs_path", "")) for r in rows}


def _sync_partitions(instance: dg.DagsterInstance, keys: list[str]) -> tuple[set[str], set[str]]:
    existing = set(instance.get_dynamic_partitions(SKILLS_PARTITION))
    current = set(keys)
    added, removed = current - existing, existing - current
    if added:
        instance.add_dynamic_partitions(SKILLS_PARTITION, sorted(added))
    for key in sorted(removed):
        instance.delete_dynamic_partition(SKILLS_PARTITION, key)
    return added, removed


def _observation(r: SkillRecord) -> dg.AssetObservation:
    return dg.AssetObservation(
        asset_key=RAW_SKILL_MD.name,
        partition=r.skill_id,
        tags={"dagster/data_version": r.bundle_digest},
        metadata=provenance_metadata(r),
    )


def refresh_locations(store: ArtifactStore, moved: list[SkillRecord]) -> int:
    """Point stored snapshot records at the folder the skill is in now, when only its location changed (a moved
    hub, a new checkout of an unchanged skill): later stages read the skill's files through the record, and the old
    folder may be gone. Same content, same data version: nothing turns stale and nothing re-runs."""
    done = 0
    for r in moved:
        if not store.exists(SNAPSHOT, r.skill_id):
            continue
        stored = store.load(SNAPSHOT, r.skill_id)
        if stored.bundle_digest == r.bundle_digest and stored.abs_path != r.abs_path:
            store.save(SNAPSHOT, r.skill_id, stored.model_copy(update={
                "abs_path": r.abs_path, "source_uri": r.source_uri, "source_commit": r.source_commit}))
            done += 1
    return done


def provenance_metadata(r: SkillRecord) -> dict[str, str | dg.MetadataValue]:
    """Where a skill came from, as every per-skill asset shows it: the SKILL.md path and source commit."""
    return {
        "skill_md": dg.MetadataValue.path(str(Path(r.abs_path) / r.skill_file)),
        "source": r.source,
        "source_commit": r.source_commit or "",
        "rel_path": r.rel_path,
        "bundle_digest": r.bundle_digest,
    }


SNAPSHOT_BATCH = 200  # partitions per snapshot run in a backfill, a sensor's batch or `skill2env run`


@dg.asset(
    name=SNAPSHOT.name,
    partitions_def=skills_partitions,
    deps=[raw_skill_md],
    group_name="skillhub",
    kinds={"python", "json"},
    owners=OWNERS,
    code_version=asset_code_version(SNAPSHOT),
    backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=SNAPSHOT_BATCH),
    output_required=False,
)
def skillhub_snapshot(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource,
                      skillhub: SkillHubResource, llm: LLMResource) -> Iterator[dg.MaterializeResult]:
    """One skill's record from the latest crawl: parsed frontmatter, files, verdict with evidence, duplicate status,
    and - when a model endpoint is configured and the sources' `settings.screen.second_opinion` is on - the model's
    second opinion (it may add a blocking reason with a verified quote; with `second_opinion_clears` on it may also
    clear a needs_* code with one, never malicious or harmful; disagreements are in the metadata).

    Cheap per skill, so a backfill runs up to SNAPSHOT_BATCH partitions per run (a screened-out skill costs its
    share of one run, not a run of its own). Dagster 1.13 gives every partition of a multi-partition run the same
    data version and input provenance, which would break per-skill staleness; so a batch run records one
    materialization per partition itself, with that partition's own data version and the raw_skill_md event it
    read (`batch_materialization`), and yields no output. A one-partition run returns its result as usual."""
    store = artifacts.store()
    snap_dir = latest_snapshot_dir(store.dir(CRAWL))
    screen = skillhub.load().settings.screen
    keys = context.partition_keys
    if len(keys) == 1:
        record = _snapshot_one(store, snap_dir, keys[0], screen, llm)
        context.log.info("skill=%s status=%s reasons=%s", keys[0], record.status.value,
                         [c.value for c in record.reasons])
        yield _snapshot_result(record)
        return
    inputs = raw_inputs(context.instance, keys)
    code = context.assets_def.code_versions_by_key[context.asset_key] or context.run_id
    log_asset_events(context, (batch_materialization(key, _snapshot_result(_snapshot_one(store, snap_dir, key, screen,
                                                                                    llm)), code, inputs.get(key))
                               for key in keys))
    context.log.info("snapshot batch: %d partitions, %s .. %s", len(keys), keys[0], keys[-1])


def _snapshot_one(store: ArtifactStore, snap_dir: Path, key: str, screen: Any, llm: LLMResource) -> SkillRecord:
    record = load_record(snap_dir, key)
    endpoint = opinion_endpoint(llm)
    if endpoint is not None and screen.second_opinion:
        with stage_run(store, SNAPSHOT, key, "llm", endpoint.model):
            record = _with_second_opinion(record, endpoint, screen.second_opinion_clears)
    store.save(SNAPSHOT, key, record)
    return record


def raw_inputs(instance: dg.DagsterInstance, keys: list[str]) -> dict[str, tuple[int, str]]:
    """partition -> (storage id, data version) of its latest raw_skill_md observation: what Dagster records as a
    one-partition run's input provenance, read for a whole batch in two queries."""
    asset = dg.AssetKey(RAW_SKILL_MD.name)
    ids = instance.event_log_storage.get_latest_storage_id_by_partition(
        asset, DagsterEventType.ASSET_OBSERVATION, partitions=set(keys))
    out: dict[str, tuple[int, str]] = {}
    wanted = sorted(ids.values())
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        for r in instance.fetch_observations(dg.AssetRecordsFilter(asset_key=asset, storage_ids=chunk),
                                             limit=len(chunk)).records:
            obs = r.asset_observation
            if r.partition_key is not None and obs is not None:
                out[r.partition_key] = (r.storage_id, obs.tags.get(DATA_VERSION_TAG, DEFAULT_DATA_VERSION.value))
    return out


def batch_materialization(key: str, result: dg.MaterializeResult, code_version: str,
                          raw: tuple[int, str] | None) -> dg.AssetMaterialization:
    """The materialization Dagster would have recorded for this partition alone: its data version, the asset's
    code version and the raw_skill_md event (pointer and data version) it was computed from."""
    raw_key = dg.AssetKey(RAW_SKILL_MD.name)
    assert result.data_version is not None
    tags = {
        CODE_VERSION_TAG: code_version,
        get_input_data_version_tag(raw_key): raw[1] if raw else DEFAULT_DATA_VERSION.value,
        get_input_event_pointer_tag(raw_key): str(raw[0]) if raw else NULL_EVENT_POINTER,
        DATA_VERSION_TAG: result.data_version.value,
        DATA_VERSION_IS_USER_PROVIDED_TAG: "true",
    }
    return dg.AssetMaterialization(SNAPSHOT.name, partition=key, metadata=result.metadata, tags=tags)


def opinion_endpoint(llm: LLMResource) -> LLMResource | None:
    """The endpoint the second opinion asks: the configured model, none offline. (One seam: the runner's tests give
    the screen a loopback model while the later stages stay offline.)"""
    return None if llm.offline else llm


def _with_second_opinion(record: SkillRecord, llm: LLMResource, may_clear: bool) -> SkillRecord:
    cache = OpinionCache(Path(llm.cache_dir) / "second_opinion" if llm.cache_dir else None)
    return second_opinion(record, llm.client(), model=llm.model, cache=cache, may_clear=may_clear,
                          prompt_version=prompt_version(OPINION_TEMPLATE, llm.fingerprint()))


def _opinion_metadata(record: SkillRecord) -> dict[str, Any]:
    op = record.second_opinion
    if op is None:
        return {"second_opinion": "none (no model endpoint, or settings.screen.second_opinion is off)"}
    if op.status == "failed":
        return {"second_opinion": f"{op.model} failed ({op.failure.value if op.failure else 'unknown'}): the rules' "
                                  f"verdict stands; asked again on the next run (skill2env run, the sensor)",
                OPINION_FAILED_METADATA: op.failure.value if op.failure else "unknown", **usage_metadata(op.usage)}
    rows = "\n".join(f"| {d.code.value} | {d.kind} | {d.detail.replace('|', '/')[:80]} |" for d in op.disagreements)
    table = "| code | kind | detail |\n|---|---|---|\n" + rows if rows else "the model agrees with the rules"
    return {
        "second_opinion": f"{op.model} ({'cached' if op.cached else 'called'}): {op.summary}"[:300],
        "second_opinion_added": dg.MetadataValue.json([c.value for c in op.added]),
        "second_opinion_cleared": dg.MetadataValue.json([c.value for c in op.cleared]),
        "second_opinion_disagreements": dg.MetadataValue.md(table),
        **usage_metadata(op.usage),
    }


def _snapshot_result(record: SkillRecord) -> dg.MaterializeResult:
    findings = "\n".join(
        f"| {f.code.value} | {f.rule} | {f.file}:{f.line} | {f.text.replace('|', '/')[:80]} |" for f in record.findings
    )
    return dg.MaterializeResult(
        data_version=dg.DataVersion(record_fingerprint(record)),
        metadata={
            **provenance_metadata(record),
            "name": record.name or "",
            "domain": record.domain,
            "status": record.status.value,
            ELIGIBLE_METADATA: record.is_eligible,
            "reasons": dg.MetadataValue.json([c.value for c in record.reasons]),
            "duplicate_of": record.duplicate_of or "",
            "warnings": dg.MetadataValue.json(record.warnings),
            "evidence": dg.MetadataValue.md(
                "| code | rule | where | text |\n|---|---|---|---|\n" + findings if findings else "no findings"
            ),
            **_opinion_metadata(record),
        },
    )
