"""Seeded axis sampling per planned workflow/variant, and the corpus-level coverage table.

Reproducibility: each variant's RNG is seeded from (skill bundle digest, variant index, global seed), so the same
inputs always give the same sample (the reference implementation used an unseeded RNG). Complexity is stratified
across a skill's variants: the counts follow the catalogue weights by largest-remainder allocation, and a
skill-level seeded shuffle decides which variant gets which level.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from skill2env_dagster.catalogue import (
    CAPABILITIES,
    AxisCatalogue,
    PatternPool,
    load_axes,
    load_patterns,
)
from skill2env_dagster.hashing import sha256_bytes
from skill2env_dagster.models.axes import AxisSample, AxisSampleSet, Capability, Complexity
from skill2env_dagster.models.plan import AxisCombo, Workflow, WorkflowPlanSet

K = TypeVar("K")

AXES = ("archetype", "primary_verifier_pattern", "complexity", "persona", "tone", "expertise",
        "capability_dimension", "difficulty_pattern")


def derive_seed(bundle_digest: str, variant: int | str, global_seed: int) -> int:
    return int(sha256_bytes(f"{bundle_digest}:{variant}:{global_seed}".encode())[:16], 16)


def stratified_levels(n: int, weights: Mapping[K, float], rng: random.Random) -> list[K]:
    """n levels whose counts follow the weights as closely as integers allow, in seeded order."""
    total = sum(weights.values())
    exact = {k: n * w / total for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    order = sorted(weights, key=lambda k: (-(exact[k] - counts[k]), list(weights).index(k)))
    for k in order[: n - sum(counts.values())]:
        counts[k] += 1
    levels = [k for k in weights for _ in range(counts[k])]
    rng.shuffle(levels)
    return levels


def _weighted(rng: random.Random, weights: Mapping[K, float]) -> K:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys], k=1)[0]


def _valid_combo(combo: AxisCombo, cat: AxisCatalogue) -> bool:
    """Archetype and persona are open vocabularies (any label); the verifier pattern is a closed list."""
    return combo.primary_verifier_pattern in cat.primary_verifier_pattern


def _primary(workflow: Workflow, rng: random.Random, cat: AxisCatalogue) -> tuple[AxisCombo, bool, list[AxisCombo]]:
    """Pick the primary combination from the pool by rank weight; the rest (and invalid ones) become fallbacks."""
    pool = list(workflow.axis_pool)
    valid = [c for c in pool if _valid_combo(c, cat)]
    if valid:
        chosen = rng.choices(valid, weights=[1.0 / (pool.index(c) + 1) for c in valid], k=1)[0]
        return chosen, True, [c for c in pool if c is not chosen]
    sampled = AxisCombo(
        archetype=pool[0].archetype if pool else _weighted(rng, cat.archetype),
        primary_verifier_pattern=_weighted(rng, cat.primary_verifier_pattern),
        persona=pool[0].persona if pool else _weighted(rng, cat.persona),
    )
    return sampled, False, pool


def _difficulty(rng: random.Random, archetype: str, dimension: str, patterns: PatternPool) -> str:
    candidates = [p for p in patterns.by_dimension(dimension) if p.suits(archetype)] or patterns.by_dimension(dimension)
    return rng.choices(candidates, weights=[p.weight for p in candidates], k=1)[0].id


def sample_variant(
    plans: WorkflowPlanSet, workflow: Workflow, variant: int, complexity: Complexity, dimension: Capability,
    global_seed: int,
    cat: AxisCatalogue, patterns: PatternPool,
) -> AxisSample:
    seed = derive_seed(plans.bundle_digest, variant, global_seed)
    rng = random.Random(seed)
    combo, from_pool, fallbacks = _primary(workflow, rng, cat)
    return AxisSample(
        variant=variant, workflow=workflow.name, archetype=combo.archetype,
        primary_verifier_pattern=combo.primary_verifier_pattern, complexity=complexity, persona=combo.persona,
        tone=_weighted(rng, cat.tone), expertise=_weighted(rng, cat.expertise), capability_dimension=dimension,
        difficulty_pattern=_difficulty(rng, combo.archetype, dimension, patterns), from_pool=from_pool,
        fallbacks=fallbacks, seed=seed,
    )


MIN_SAMPLES = 4  # candidates per skill at least, whatever the number of its workflows


def sample_axes(
    plans: WorkflowPlanSet, *, global_seed: int = 0, variants_per_workflow: int = 1,
    catalogue: AxisCatalogue | None = None, patterns: PatternPool | None = None,
) -> AxisSampleSet:
    """One sample per (workflow, variant); complexity stratified and capability dimensions rotated per skill. A
    skill with few workflows gets more variants of each, so that it has at least MIN_SAMPLES candidates (a plan
    that builds only on rules that decide a task often has one or two workflows)."""
    cat, pool = catalogue or load_axes(), patterns or load_patterns()
    n = len(plans.workflows)
    per = max(1, variants_per_workflow, -(-MIN_SAMPLES // n) if n else 0)
    slots = [w for w in plans.workflows for _ in range(per)]
    skill_rng = random.Random(derive_seed(plans.bundle_digest, "skill", global_seed))
    levels = stratified_levels(len(slots), {k: v.weight for k, v in cat.complexity.items()}, skill_rng)
    dims = list(CAPABILITIES)
    skill_rng.shuffle(dims)
    samples = [
        sample_variant(plans, w, v, levels[v], dims[v % len(dims)], global_seed, cat, pool)
        for v, w in enumerate(slots)
    ]
    return AxisSampleSet(skill_id=plans.skill_id, bundle_digest=plans.bundle_digest, global_seed=global_seed,
                         samples=samples)


def coverage_table(
    sets: Iterable[AxisSampleSet], *, catalogue: AxisCatalogue | None = None, patterns: PatternPool | None = None
) -> dict[str, dict[str, int]]:
    """axis -> value -> count over a corpus; catalogue values with no sample are listed with 0 so gaps show."""
    cat, pool = catalogue or load_axes(), patterns or load_patterns()
    known: dict[str, Sequence[str]] = {
        "archetype": list(cat.archetype), "primary_verifier_pattern": list(cat.primary_verifier_pattern),
        "complexity": list(cat.complexity), "persona": list(cat.persona), "tone": list(cat.tone),
        "expertise": list(cat.expertise), "capability_dimension": list(CAPABILITIES),
        "difficulty_pattern": [p.id for p in pool.patterns],
    }
    table = {axis: dict.fromkeys(known[axis], 0) for axis in AXES}
    for s in (x for st in sets for x in st.samples):
        for axis in AXES:
            value = str(getattr(s, axis))
            table[axis][value] = table[axis].get(value, 0) + 1
    return table
