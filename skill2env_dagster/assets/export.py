"""Assets `corpus_export` (dataset, tables, DuckDB) and `corpus_stats` (funnel and coverage, plots in the UI).

Both are aggregates over every skill partition: they summarise the corpus as a whole, so they depend on the
per-skill assets for lineage and read all materialised partitions from the artifact store.
"""

# No `from __future__ import annotations`: Dagster resolves the dg.Config parameter type at decoration time.

import base64
from pathlib import Path

import dagster as dg
from pydantic import Field

from skill2env_dagster.artifacts import (
    AXES,
    CORPUS_KEY,
    EXPORT,
    GATES,
    HARDENING,
    PLANS,
    PROBE,
    SNAPSHOT,
    STATS,
    TASKS,
)
from skill2env_dagster.assets.common import asset_code_version
from skill2env_dagster.export.inputs import load_inputs
from skill2env_dagster.export.run import CURRENT_EXPORT, PLOTS_DIR, STATS_FILE, export_corpus
from skill2env_dagster.models.export import CorpusStats, DecontamConfig
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import read_model


class CorpusExportConfig(dg.Config):
    out_dir: str = Field(default="", description="Export folder; default <artifacts>/corpus_export/current.")
    benchmark_paths: list[str] = Field(default_factory=list, description="Harbor task folders / text files.")
    jaccard_threshold: float = 0.8
    containment_threshold: float = 0.5


def export_dir(artifacts: ArtifactStoreResource, config_out: str = "") -> Path:
    return Path(config_out) if config_out else artifacts.store().dir(EXPORT) / CURRENT_EXPORT


@dg.asset(
    name=EXPORT.name, deps=[a.name for a in (SNAPSHOT, PLANS, AXES, TASKS, GATES, PROBE, HARDENING)],
    group_name="analytics",
    kinds={"parquet", "duckdb", "harbor"}, code_version=asset_code_version(EXPORT),
)
def corpus_export(context: dg.AssetExecutionContext, config: CorpusExportConfig,
                  artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
    """Decontaminate retained tasks, then publish the Harbor dataset, parquet tables and a DuckDB file at once."""
    out = export_dir(artifacts, config.out_dir)
    cfg = DecontamConfig(benchmark_paths=config.benchmark_paths, jaccard_threshold=config.jaccard_threshold,
                         containment_threshold=config.containment_threshold)
    result = export_corpus(load_inputs(artifacts.store()), out, cfg)
    context.log.info(f"corpus_export tasks={result.manifest.n_tasks} excluded={len(result.manifest.excluded)}")
    excluded = {e.task_name: e.reason.value for e in result.manifest.excluded}
    return dg.MaterializeResult(
        metadata={
            "exported_tasks": result.manifest.n_tasks,
            "excluded": dg.MetadataValue.json(excluded),
            "decontamination_checked": result.manifest.decontamination_checked,
            "contaminated": len(result.decontam.flagged) if result.decontam else 0,
            "table_rows": dg.MetadataValue.json(result.tables),
            "duckdb_views": dg.MetadataValue.json(result.views),
            "export_dir": dg.MetadataValue.path(str(out)),
            "dataset": dg.MetadataValue.path(str(out / "dataset")),
            "duckdb": dg.MetadataValue.path(str(out / "corpus.duckdb")),
        },
    )


def _money(value: float | None, total: float | None) -> dg.MetadataValue | str:
    """A cost as metadata: a float, "unknown" when no price was configured, "n/a" when nothing was retained."""
    if total is None:
        return "unknown"
    return dg.MetadataValue.float(value) if value is not None else "n/a"


def _inline_png(name: str, path: Path) -> str:
    return f"### {name}\n\n![{name}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})"


def _latest_export_dir(context: dg.AssetExecutionContext) -> Path | None:
    """Where the last corpus_export wrote (its out_dir may have been configured away from the default)."""
    event = context.instance.get_latest_materialization_event(dg.AssetKey(EXPORT.name))
    mat = event.asset_materialization if event else None
    value = mat.metadata.get("export_dir") if mat else None
    return Path(value.value) if value is not None else None


@dg.asset(name=STATS.name, deps=[EXPORT.name], group_name="analytics", kinds={"python", "matplotlib"},
          code_version=asset_code_version(STATS))
def corpus_stats(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
    """Funnel by reason, domain mix, axis coverage, gate pass rates and cost per retained task, with plots."""
    out = _latest_export_dir(context) or export_dir(artifacts)
    stats = read_model(out / STATS_FILE, CorpusStats)
    store = artifacts.store()
    digest = store.save(STATS, CORPUS_KEY, stats)
    plots = sorted((out / PLOTS_DIR).glob("*.png"))
    context.log.info(f"corpus_stats funnel={stats.funnel}")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(digest[:24]),
        metadata={
            "funnel": dg.MetadataValue.json(stats.funnel),
            "screened_out_by_reason": dg.MetadataValue.json(stats.skill_reasons),
            "recorded_not_screened_out": dg.MetadataValue.json(stats.recorded_reasons),
            "gate_pass_rate": dg.MetadataValue.float(stats.gate_pass_rates["overall"].pass_rate or 0.0),
            "stage_failures": dg.MetadataValue.json(stats.stage_failures),
            "generators": dg.MetadataValue.json(stats.generators),
            "llm_usage": dg.MetadataValue.json(stats.cost.model_dump(mode="json")),
            "cost_usd_per_retained_task": _money(stats.cost.cost_usd_per_retained_task, stats.cost.cost_usd),
            "domain_mix": dg.MetadataValue.json(stats.domain_mix),
            "plots": dg.MetadataValue.md("\n\n".join(_inline_png(p.stem, p) for p in plots)),
            **{f"plot_{p.stem}": dg.MetadataValue.path(str(p)) for p in plots},
        },
    )
