"""Asset `retrieval_probe`: one aggregate over the whole corpus, with a per-skill table inside.

Why aggregate and not partitioned by skill: a task's rank depends on every candidate skill, so no skill's score
can be computed (or kept fresh) on its own -- adding, removing or editing any skill moves every rank and chance
(1/N). One unpartitioned asset recomputes the whole ranking in seconds (8k tasks x 3.4k skills, see
benchmarks/bench_probe.py) and stores the per-skill scores as `ProbeReport.per_skill`, shown in the UI as a table.
"""

# No `from __future__ import annotations`: Dagster resolves the dg.Config parameter type at decoration time.

from pathlib import Path

import dagster as dg

from skill2env_dagster.artifacts import CORPUS_KEY, PROBE, SNAPSHOT, TASKS
from skill2env_dagster.assets.common import asset_code_version
from skill2env_dagster.hashing import digest_model
from skill2env_dagster.models.probe import ALL_MODES, BASE_MODES, ProbeConfig, ProbeReport, ProbeTaskResult
from skill2env_dagster.probe import ProbeTask, candidate_skills, probe_retrieval, read_tasks
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore


class RetrievalProbeConfig(dg.Config):
    modes: list[str] = list(ALL_MODES)  # noqa: RUF012  (dg.Config is pydantic: defaults are copied per instance)
    mask_top_k: int = 25


def _retained_tasks(store: ArtifactStore) -> tuple[list[ProbeTask], list[ProbeTaskResult]]:
    return read_tasks((Path(b.path), b.task_name) for bundles in store.load_all(TASKS).values()
                      for b in bundles.retained())


def _modes_table(report: ProbeReport) -> str:
    rows = [f"| {m} | {r.n} | {r.top1:.1%} | {r.top10:.1%} | {r.mrr:.3f} |" for m, r in report.modes.items()]
    head = f"chance: top-1 {report.chance:.4%}, top-10 {report.chance_top10:.4%} (N = {report.n_skills})\n\n"
    return head + "| mode | n | top1 | top10 | MRR |\n|---|---|---|---|---|\n" + "\n".join(rows)


def _skills_table(report: ProbeReport, limit: int = 25) -> str:
    scored = sorted((s for s in report.per_skill if s.top1 is not None), key=lambda s: (s.mrr or 0, s.skill_id))
    rows = [f"| {s.skill_id} | {s.domain} | {s.n_tasks} | {s.top1:.0%} | {s.mrr:.3f} | "
            f"{'-' if s.masked_top1 is None else f'{s.masked_top1:.0%}'} |" for s in scored[:limit]]
    return ("Lowest-scoring skills (primary mode)\n\n| skill | domain | tasks | top1 | MRR | masked top1 |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows))


@dg.asset(
    name=PROBE.name, deps=[TASKS.name, SNAPSHOT.name], group_name="analytics", kinds={"python", "scikit-learn"},
    code_version=asset_code_version(PROBE),
    description="Does each retained task still retrieve its own skill? TF-IDF, BM25 and entity-masked modes.",
)
def retrieval_probe(context: dg.AssetExecutionContext, config: RetrievalProbeConfig,
                    artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
    """Rank every eligible skill for every retained task; store the report under retrieval_probe/corpus.json."""
    store = artifacts.store()
    skills = candidate_skills(list(store.load_all(SNAPSHOT).values()))
    if not skills:
        store.delete(PROBE, CORPUS_KEY)
        return dg.MaterializeResult(metadata={"status": "skipped", "reason": "no eligible skills in the snapshot"})
    tasks, invalid = _retained_tasks(store)
    report = probe_retrieval(skills, tasks, ProbeConfig(modes=config.modes, mask_top_k=config.mask_top_k), invalid)
    store.save(PROBE, CORPUS_KEY, report)
    context.log.info(f"retrieval_probe skills={report.n_skills} scored={report.n_scored} seconds={report.seconds:.1f}")
    headline = {f"{m}_top1": dg.MetadataValue.float(report.modes[m].top1) for m in BASE_MODES if m in report.modes}
    return dg.MaterializeResult(
        data_version=dg.DataVersion(digest_model(report.model_copy(update={"seconds": 0.0}))[:24]),
        metadata={
            "n_skills": report.n_skills, "n_scored": report.n_scored, "n_unmatched": report.n_unmatched,
            "n_invalid": report.n_invalid, "chance": dg.MetadataValue.float(report.chance), **headline,
            "masking_drop": dg.MetadataValue.json(report.masking_drop),
            "modes": dg.MetadataValue.md(_modes_table(report)),
            "per_skill": dg.MetadataValue.md(_skills_table(report)),
            "report": dg.MetadataValue.path(str(store.path(PROBE, CORPUS_KEY))),
        },
    )
