"""Exports and analytics: decontamination, parquet tables, DuckDB, the Harbor dataset folder, stats and plots."""

from skill2env_dagster.export.decontam import check_contamination, decontaminate, load_benchmark_docs
from skill2env_dagster.export.inputs import CorpusInputs, load_inputs
from skill2env_dagster.export.run import ExportResult, export_corpus
from skill2env_dagster.export.stats import corpus_stats

__all__ = [
    "CorpusInputs",
    "ExportResult",
    "check_contamination",
    "corpus_stats",
    "decontaminate",
    "export_corpus",
    "load_benchmark_docs",
    "load_inputs",
]
