"""Which partitions are provably fresh, from Dagster's own provenance records, in a few bulk queries.

Dagster's stale-status resolver answers one (asset, partition) at a time with several queries each: on a
129-skill hub on this machine that was a second per partition, so a warm run spent minutes proving that nothing
changed (and a 47,000-skill hub would spend hours). This scan reads the same records in bulk — for each per-skill
asset, the latest materialisation of every partition (one query for their ids, then the records by id), and for
each parent the id of its latest event — and applies the resolver's own rules conservatively:

- a partition's asset is fresh when its latest materialisation carries the asset's current code version, its
  recorded inputs are exactly the asset's parents, and each parent's latest event is the one recorded as its
  input or carries the same data version (a re-run with identical output, a re-crawl at a new commit of an
  unchanged skill: the resolver compares the same two data versions);
- a missing asset is fine only where the runner would not run it anyway (an ineligible skill's downstream);
- a snapshot whose model second opinion failed (the rules' verdict stood) is never called fresh, so the next
  snapshot batch asks the model again (Dagster's resolver calls it fresh: this is the scan's one addition);
- `task_bundles` must also have been made with this run's creation settings (when settings are given: the
  change sensor has none, any settings will do).

Only partitions that pass for every asset skip the resolver. A partition whose assets are each either provably
fresh or missing gets a plan (run the missing ones the runner needs) without asking the resolver — the usual
case on a cold run; any other partition gets the resolver's answer. So the scan saves queries but, the failed
opinion aside, never changes a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import extract_data_provenance_from_entry, extract_data_version_from_entry
from dagster._core.events import DagsterEventType

from skill2env_dagster.artifacts import SNAPSHOT, TASKS
from skill2env_dagster.assets.skillhub import ELIGIBLE_METADATA, OPINION_FAILED_METADATA
from skill2env_dagster.models.freshness import Plan

CHUNK = 500  # storage ids per records query


def _latest_ids(instance: dg.DagsterInstance, key: dg.AssetKey, external: bool) -> Mapping[str, int]:
    kind = DagsterEventType.ASSET_OBSERVATION if external else DagsterEventType.ASSET_MATERIALIZATION
    return instance.event_log_storage.get_latest_storage_id_by_partition(key, kind)


def _latest_records(instance: dg.DagsterInstance, key: dg.AssetKey, external: bool = False) -> dict[str, Any]:
    """partition -> its latest materialisation record (observation record for an external asset)."""
    ids = sorted(_latest_ids(instance, key, external).values())
    fetch = instance.fetch_observations if external else instance.fetch_materializations
    out: dict[str, Any] = {}
    for i in range(0, len(ids), CHUNK):
        chunk = ids[i:i + CHUNK]
        records = fetch(dg.AssetRecordsFilter(asset_key=key, storage_ids=chunk), limit=len(chunk)).records
        out.update({r.partition_key: r for r in records if r.partition_key is not None})
    return out


def _metadata(record: Any, name: str) -> Any:
    """A metadata value of a materialisation record (None when absent)."""
    mat = record.asset_materialization if record is not None else None
    value = mat.metadata.get(name) if mat is not None else None
    return None if value is None else value.value


def job_chain(job: Any, graph: Any) -> list[dg.AssetKey]:
    """A job's assets, upstream first."""
    keys = set(job.asset_layer.executable_asset_keys)
    return [k for k in graph.toposorted_asset_keys if k in keys]


class FreshnessScan:
    """Loads the provenance of every partition of the chain once; `fresh(key, eligible)` then costs nothing."""

    def __init__(self, instance: dg.DagsterInstance, graph: Any, chain: list[dg.AssetKey],
                 settings: Mapping[str, Any] | None, settings_key: str) -> None:
        self.instance, self.graph, self.chain = instance, graph, chain
        self.settings, self.settings_key = (None if settings is None else dict(settings)), settings_key
        self.records = {a: _latest_records(instance, a) for a in chain}
        parents = {p for a in chain for p in graph.get(a).parent_keys}
        self.parent_ids = {p: _latest_ids(instance, p, graph.get(p).is_external) for p in parents}
        self.external: dict[dg.AssetKey, dict[str, Any]] = {}  # latest observations, read when first needed

    def needs(self, asset: dg.AssetKey, key: str) -> bool:
        """This one asset of the partition is missing or not provably fresh (e.g. the snapshot, to batch it)."""
        return self.records[asset].get(key) is None or not self._asset_fresh(asset, key, eligible=False)

    def verdict(self, key: str) -> bool | None:
        """Eligible or not, as the partition's latest snapshot says (its final verdict, after the second opinion);
        None without one (or the snapshot is not in this scan's chain)."""
        record = self.records.get(dg.AssetKey(SNAPSHOT.name), {}).get(key)
        value = _metadata(record, ELIGIBLE_METADATA)
        return None if value is None else bool(value)

    def plan(self, key: str, eligible: bool) -> Plan | None:
        """The partition's first selection when every asset is provably fresh or missing; None: ask Dagster."""
        selection: list[str] = []
        quiet: list[str] = []
        for asset in self.chain:
            name = asset.path[-1]
            if self.records[asset].get(key) is None:
                (selection if eligible or name == SNAPSHOT.name else quiet).append(name)
            elif not self._asset_fresh(asset, key, eligible):
                return None
        return Plan(tuple(selection), tuple(quiet))

    def _asset_fresh(self, asset: dg.AssetKey, key: str, eligible: bool) -> bool:
        record = self.records[asset][key]
        if asset.path[-1] == SNAPSHOT.name and _metadata(record, OPINION_FAILED_METADATA) is not None:
            return False  # the second opinion failed last time: ask again (a success is cached, so cheap)
        prov = extract_data_provenance_from_entry(record.event_log_entry)
        parents = set(self.graph.get(asset).parent_keys)
        if prov is None or prov.code_version != self.graph.get(asset).code_version:
            return False
        if set(prov.input_data_versions) != parents or set(prov.input_storage_ids) != parents:
            return False
        if not all(self._input_current(key, p, prov.input_storage_ids[p], prov.input_data_versions[p])
                   for p in parents):
            return False
        return not (eligible and asset.path[-1] == TASKS.name and not self._same_settings(record))

    def _input_current(self, key: str, parent: dg.AssetKey, pointer: int | None, consumed: Any) -> bool:
        """No parent event after the one consumed, or the latest one has the consumed data version (the
        resolver's own two comparisons)."""
        latest = self.parent_ids[parent].get(key)
        if latest is None or (pointer is not None and latest <= pointer):
            return True
        return pointer is not None and self._latest_data_version(parent, key) == consumed

    def _latest_data_version(self, parent: dg.AssetKey, key: str) -> Any:
        if parent in self.records:
            record = self.records[parent].get(key)
        else:
            if parent not in self.external:
                self.external[parent] = _latest_records(self.instance, parent, self.graph.get(parent).is_external)
            record = self.external[parent].get(key)
        return None if record is None else extract_data_version_from_entry(record.event_log_entry)

    def _same_settings(self, record: Any) -> bool:
        mat = record.asset_materialization
        value = mat.metadata.get(self.settings_key) if mat else None
        return self.settings is None or value is None or value.value == self.settings
