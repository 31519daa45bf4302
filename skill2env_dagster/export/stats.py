"""Corpus statistics: the funnel from crawled skills to exported tasks, and what the retained corpus covers."""

from __future__ import annotations

from collections import Counter

from skill2env_dagster.export.inputs import CorpusInputs
from skill2env_dagster.models.export import CorpusStats, CostSummary, CountRate
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.models.plan import Usage

AXES = ("archetype", "primary_verifier_pattern", "complexity", "persona", "tone", "expertise")


def _funnel(x: CorpusInputs, exported: int) -> dict[str, int]:
    candidates = [b for s in x.bundles for b in s.bundles]
    gated = [r for g in x.gates for r in g.reports.values()]
    return {
        "crawled": len(x.skills),
        "eligible": sum(s.is_eligible for s in x.skills),
        "planned": len(x.plans),
        "task_candidates": len(candidates),
        "retained": sum(b.status == "retained" for b in candidates),
        "gates_passed": sum(r.verdict == GateVerdict.RETAINED for r in gated),
        "contaminated": len(x.decontam.flagged) if x.decontam else 0,
        "exported": exported,
    }


def _rate(c: Counter) -> CountRate:
    total = c["pass"] + c["fail"] + c["error"]
    return CountRate(passed=c["pass"], failed=c["fail"], errored=c["error"],
                     pass_rate=c["pass"] / total if total else None)


def _gate_rates(x: CorpusInputs) -> dict[str, CountRate]:
    per_check: dict[str, Counter] = {}
    overall: Counter = Counter()
    for g in x.gates:
        for r in g.reports.values():
            overall[{GateVerdict.RETAINED: "pass", GateVerdict.REJECTED: "fail"}.get(r.verdict, "error")] += 1
            for c in r.checks:
                per_check.setdefault(c.name, Counter())[c.verdict.value] += 1
    rates = {name: _rate(per_check[name]) for name in sorted(per_check)}
    rates["overall"] = _rate(overall)
    return rates


def _cost(x: CorpusInputs, retained: int) -> CostSummary:
    usages: list[Usage] = [p.usage for p in x.plans] + [b.usage for b in x.bundles]
    total = Usage(**{k: sum(getattr(u, k) for u in usages) for k in Usage.model_fields})
    tokens = total.prompt_tokens + total.completion_tokens
    return CostSummary(**total.model_dump(), retained_tasks=retained,
                       cost_usd_per_retained_task=total.cost_usd / retained if retained else None,
                       tokens_per_retained_task=tokens / retained if retained else None)


def corpus_stats(x: CorpusInputs, exported: int | None = None) -> CorpusStats:
    """Compute the statistics; `exported` is the dataset size when an export ran (else retained minus flagged)."""
    retained = x.retained()
    flagged = set(x.decontam.flagged) if x.decontam else set()
    kept = exported if exported is not None else sum(b.task_name not in flagged for b in retained)
    domain_of = {s.skill_id: s.domain for s in x.skills}
    domains: dict[str, Counter] = {}
    for s in x.skills:
        if s.is_eligible:
            domains.setdefault(s.domain, Counter())["eligible_skills"] += 1
    for b in retained:
        domains.setdefault(domain_of.get(b.skill_id, "unknown"), Counter())["retained_tasks"] += 1
    coverage = {axis: dict(Counter(getattr(b.axes, axis) for b in retained).most_common()) for axis in AXES}
    probe = {}
    if x.probe is not None:
        probe = {"n_skills": x.probe.n_skills, "chance": x.probe.chance}
        probe.update({f"{m}_top1": r.top1 for m, r in x.probe.modes.items()})
    return CorpusStats(
        funnel=_funnel(x, kept),
        skill_reasons=dict(Counter(r.value for s in x.skills for r in s.reasons).most_common()),
        task_reasons=dict(Counter(r.value for s in x.bundles for b in s.bundles if b.status != "retained"
                                  for r in b.reasons).most_common()),
        domain_mix={d: {"eligible_skills": c["eligible_skills"], "retained_tasks": c["retained_tasks"]}
                    for d, c in sorted(domains.items())},
        axis_coverage=coverage,
        gate_pass_rates=_gate_rates(x),
        cost=_cost(x, len(retained)),
        probe=probe,
    )
