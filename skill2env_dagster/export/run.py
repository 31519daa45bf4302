"""`export_corpus`: decontaminate, then publish tables, DuckDB, the Harbor dataset, statistics and plots at once.

Everything is written into a staging folder that replaces the previous export in one rename, so readers never
see a dataset from one run next to tables from another.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.parquet as pq

from skill2env_dagster.atomic import atomic_replace_dir
from skill2env_dagster.export.dataset import write_dataset
from skill2env_dagster.export.decontam import TextDoc, check_contamination, load_benchmark_docs
from skill2env_dagster.export.duck import write_duckdb
from skill2env_dagster.export.inputs import CorpusInputs, instruction_of
from skill2env_dagster.export.plots import write_plots
from skill2env_dagster.export.stats import corpus_stats
from skill2env_dagster.export.tables import build_tables
from skill2env_dagster.models.export import CorpusStats, DecontamConfig, DecontamReport, ExportManifest
from skill2env_dagster.store import write_model

log = logging.getLogger(__name__)

CURRENT_EXPORT = "current"  # the newest export, under <artifacts>/corpus_export/
TABLES_DIR, DATASET_DIR, PLOTS_DIR = "tables", "dataset", "plots"
DUCKDB_FILE, STATS_FILE, DECONTAM_FILE = "corpus.duckdb", "stats.json", "decontamination.json"


@dataclass
class ExportResult:
    root: Path
    manifest: ExportManifest
    stats: CorpusStats
    decontam: DecontamReport | None
    tables: dict[str, int]
    views: list[str]
    plots: dict[str, Path]


def decontaminate_retained(inputs: CorpusInputs, cfg: DecontamConfig) -> DecontamReport | None:
    """Check the instructions of the tasks to export (hardened versions in place of their origins) against the
    configured benchmarks; None when none is configured."""
    if not cfg.benchmark_paths:
        return None
    ours = [TextDoc(b.task_name, instruction_of(b)) for b in inputs.to_export()[0]]
    return check_contamination(ours, load_benchmark_docs(cfg.benchmark_paths), cfg)


def export_corpus(inputs: CorpusInputs, out: Path, cfg: DecontamConfig | None = None) -> ExportResult:
    """Write OUT/{tables/*.parquet, corpus.duckdb, dataset/, stats.json, plots/*.png, decontamination.json}."""
    cfg = cfg or DecontamConfig()
    inputs = replace(inputs, decontam=decontaminate_retained(inputs, cfg))
    staging = out.with_name(f".{out.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)  # a crashed earlier export's leftovers
    flagged = set(inputs.decontam.flagged) if inputs.decontam else set()
    exported, lineage = inputs.to_export()
    manifest = write_dataset(exported, inputs.generator_of(), flagged, staging / DATASET_DIR,
                             decontam_checked=inputs.decontam is not None, benchmark_paths=cfg.benchmark_paths,
                             lineage=lineage)
    tables = build_tables(inputs)
    (staging / TABLES_DIR).mkdir(parents=True)
    for name, table in tables.items():
        pq.write_table(table, staging / TABLES_DIR / f"{name}.parquet")
    views = write_duckdb(tables, staging / DUCKDB_FILE)
    stats = corpus_stats(tables, exported=manifest.n_tasks, probe=inputs.probe)
    write_model(staging / STATS_FILE, stats)
    if inputs.decontam is not None:
        write_model(staging / DECONTAM_FILE, inputs.decontam)
    plots = write_plots(stats, staging / PLOTS_DIR)
    atomic_replace_dir(staging, out)
    log.info("export out=%s tasks=%d excluded=%d", out, manifest.n_tasks, len(manifest.excluded))
    return ExportResult(root=out, manifest=manifest, stats=stats, decontam=inputs.decontam,
                        tables={k: v.num_rows for k, v in tables.items()}, views=views,
                        plots={k: out / PLOTS_DIR / p.name for k, p in plots.items()})
