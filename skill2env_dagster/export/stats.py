"""Corpus statistics: the funnel from crawled skills to exported tasks, and what the retained corpus covers.

Computed with pandas from the same typed tables the export writes as parquet and loads into DuckDB, so the stats
file, the tables and the DuckDB views can never disagree about a count.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from skill2env_dagster.models.export import CorpusStats, CostSummary, CountRate
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.models.probe import ProbeReport
from skill2env_dagster.reasons import INFO_CODES

AXES = ("archetype", "primary_verifier_pattern", "complexity", "persona", "tone", "expertise")
USAGE_COLUMNS = list(Usage.model_fields)


def _frames(tables: dict[str, pa.Table]) -> dict[str, pd.DataFrame]:
    return {name: table.to_pandas() for name, table in tables.items()}


def _counts(values: pd.Series) -> dict[str, int]:
    """Value counts, most common first (ties by value), as plain ints."""
    if values.empty:
        return {}
    counted = values.value_counts().rename_axis("value").reset_index(name="n")
    counted = counted.sort_values(["n", "value"], ascending=[False, True])
    return {str(v): int(n) for v, n in zip(counted["value"], counted["n"], strict=True)}


def _funnel(f: dict[str, pd.DataFrame], exported: int) -> dict[str, int]:
    skills, tasks, gates = f["skills"], f["tasks"], f["gates"]
    verdicts = gates.drop_duplicates(["skill_id", "task_name"])
    return {
        "crawled": len(skills),
        "screened_out": int((skills["status"] == "screened_out").sum()),
        "eligible": int(skills["eligible"].sum()),
        "planned": int(f["plans"]["skill_id"].nunique()),
        "task_candidates": len(tasks),
        "retained": int((tasks["status"] == "retained").sum()),
        "gates_passed": int((verdicts["verdict"] == "retained").sum()),
        "contaminated": int(tasks["contaminated"].fillna(False).sum()),
        "exported": exported,
    }


def _skill_reasons(skills: pd.DataFrame, blocking: bool) -> dict[str, int]:
    """Reason -> skills carrying it: the reasons of screened-out skills (non-blocking findings left out), or the
    non-blocking findings of every skill (recorded, not screened out)."""
    rows = skills[skills["status"] == "screened_out"] if blocking else skills
    reasons = rows["reasons"].map(lambda r: sorted(set(r)) if r is not None else []).explode().dropna()
    info = reasons.isin([c.value for c in INFO_CODES])
    return _counts(reasons[~info] if blocking else reasons[info])


def _rate(verdicts: pd.Series) -> CountRate:
    counts = verdicts.value_counts()
    passed, failed, errored = (int(counts.get(k, 0)) for k in ("pass", "fail", "error"))
    total = passed + failed + errored
    return CountRate(passed=passed, failed=failed, errored=errored, pass_rate=passed / total if total else None)


def _gate_rates(gates: pd.DataFrame) -> dict[str, CountRate]:
    checks = gates.dropna(subset=["check_name"])
    rates = {str(name): _rate(group["check_verdict"]) for name, group in sorted(checks.groupby("check_name"))}
    overall = gates.drop_duplicates(["skill_id", "task_name"])["verdict"]
    rates["overall"] = _rate(overall.map({"retained": "pass", "rejected": "fail"}).fillna("error"))
    return rates


def _cost(usage: pd.DataFrame, retained: int) -> CostSummary:
    """Usage of every stage, failed ones included; one unpriced row makes the cost unknown (never a partial sum)."""
    counts = {k: int(usage[k].sum()) if len(usage) else 0 for k in USAGE_COLUMNS if k != "cost_usd"}
    cost = None if usage["cost_usd"].isna().any() else float(usage["cost_usd"].sum()) if len(usage) else 0.0
    total = Usage(**counts, cost_usd=cost)
    tokens = total.prompt_tokens + total.completion_tokens
    per_task = total.cost_usd / retained if retained and total.cost_usd is not None else None
    return CostSummary(**total.model_dump(), retained_tasks=retained, cost_usd_per_retained_task=per_task,
                       tokens_per_retained_task=tokens / retained if retained else None)


def _stage_failures(skills: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Stage -> reason -> skills whose last run of that stage failed (each at its earliest failed stage)."""
    failed = skills.dropna(subset=["failed_stage"])
    return {str(stage): _counts(group["failure_reason"]) for stage, group in sorted(failed.groupby("failed_stage"))}


def _failure_examples(skills: pd.DataFrame) -> dict[str, str]:
    """Reason -> the first failure message with that reason (skills in table order)."""
    failed = skills.dropna(subset=["failure_reason"]).drop_duplicates("failure_reason")
    return {str(r): str(m) for r, m in zip(failed["failure_reason"], failed["failure_message"], strict=True)}


def _generators(usage: pd.DataFrame) -> dict[str, int]:
    """Generator -> skills it handled (every planned or failed stage has a usage row naming its generator)."""
    return _counts(usage.drop_duplicates(["skill_id", "generator"])["generator"].dropna())


def _domain_mix(skills: pd.DataFrame, retained: pd.DataFrame) -> dict[str, dict[str, int]]:
    eligible = skills[skills["eligible"]].groupby("domain").size()
    domain_of = skills.set_index("skill_id")["domain"]
    kept = retained["skill_id"].map(domain_of).fillna("unknown").value_counts()
    mix = pd.DataFrame({"eligible_skills": eligible, "retained_tasks": kept}).fillna(0).astype(int)
    return {str(d): {str(k): int(v) for k, v in row.items()} for d, row in mix.sort_index().iterrows()}


def _probe(report: ProbeReport | None) -> dict[str, float]:
    """Headline probe figures: N, chance and each mode's top-1 (the full report is its own artifact)."""
    if report is None:
        return {}
    return {"n_skills": report.n_skills, "chance": report.chance,
            **{f"{m}_top1": r.top1 for m, r in report.modes.items()}}


def corpus_stats(tables: dict[str, pa.Table], exported: int, probe: ProbeReport | None = None) -> CorpusStats:
    """Statistics of one export: `tables` are `export.tables.build_tables` output, `exported` the dataset size."""
    f = _frames(tables)
    tasks = f["tasks"]
    retained = tasks[tasks["status"] == "retained"]
    return CorpusStats(
        funnel=_funnel(f, exported),
        skill_reasons=_skill_reasons(f["skills"], blocking=True),
        recorded_reasons=_skill_reasons(f["skills"], blocking=False),
        task_reasons=_counts(tasks[tasks["status"] != "retained"]["reasons"].explode().dropna()),
        domain_mix=_domain_mix(f["skills"], retained),
        axis_coverage={axis: _counts(retained[axis]) for axis in AXES},
        gate_pass_rates=_gate_rates(f["gates"]),
        stage_failures=_stage_failures(f["skills"]),
        failure_examples=_failure_examples(f["skills"]),
        generators=_generators(f["usage"]),
        cost=_cost(f["usage"], len(retained)),
        probe=_probe(probe),
    )
