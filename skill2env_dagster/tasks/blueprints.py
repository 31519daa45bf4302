"""The offline blueprint builder: from the plan's workflow, the axis sample and the skill's knowledge to a
TaskBlueprint and the Design that realises it.

1. The skill's rules are compiled into candidate predicates, grouped by family.
2. A shape is chosen: the sampled archetype/verifier combination when a shape realises it from a family the skill
   has; otherwise the closest one (same verifier pattern, same archetype, the sample's fallback combinations, then
   any shape the skill supports, shapes the skill has not used yet first). The reason is recorded.
3. The predicates in play are picked from the family (more with each complexity level, rotated per variant).
4. The sampled difficulty pattern is realised through its effect when the shape supports it, else through another
   pattern of the same capability dimension (recorded); hard and complex tasks add effects that add steps.
5. The shape instantiates everything; the blueprint records the contract the artifacts were derived from.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from skill2env_dagster.catalogue import PatternPool, load_patterns
from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.blueprint import AxisRealisation, Challenge, Predicate, TaskBlueprint
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.plan import Workflow, WorkflowFocus
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.predicates.compile import Candidate, compile_candidates, families
from skill2env_dagster.tasks.shapes import SHAPES
from skill2env_dagster.tasks.shapes.base import Design, Shape, ShapeError, ShapeInput, rules_for_level

# Effects added with the level (after the sampled one) when the shape supports them: each adds required steps.
SEED_ATTEMPTS = 4
LEVEL_EFFECTS = {2: ("dependent", "split_sources", "multi_rule"), 3: ("split_sources", "distractor", "corrupted")}


class NoShapeError(Skill2EnvError):
    """No shape can realise any task from this skill's predicates."""


@dataclass
class Planned:
    blueprint: TaskBlueprint
    design: Design


def shape_order(sample: AxisSample, fams: dict[str, list[Candidate]], used: Sequence[str],
                focus: WorkflowFocus | None = None) -> list[tuple[Shape, str]]:
    """Shapes to try, each with the reason it was chosen ('' = the sampled combination itself)."""
    fit = [s for s in SHAPES if any(_usable(s, c) for c in fams.get(s.family, []))]
    tiers: list[tuple[list[Shape], str]] = [
        ([s for s in fit if (s.archetype, s.verifier) == (sample.archetype, sample.primary_verifier_pattern)], ""),
        ([s for s in fit if s.verifier == sample.primary_verifier_pattern],
         f"no shape realises {sample.archetype}/{sample.primary_verifier_pattern} from this skill's rules; "
         "kept the verifier pattern"),
        ([s for s in fit if s.archetype == sample.archetype],
         f"no shape realises {sample.archetype}/{sample.primary_verifier_pattern} from this skill's rules; "
         "kept the archetype"),
    ]
    for combo in sample.fallbacks:
        wanted = (combo.archetype, combo.primary_verifier_pattern)
        tiers.append(([s for s in fit if (s.archetype, s.verifier) == wanted],
                      f"sampled combination not realisable here; used the sample's fallback "
                      f"{combo.archetype}/{combo.primary_verifier_pattern}"))
    tiers.append((list(fit), f"neither {sample.archetype}/{sample.primary_verifier_pattern} nor its fallbacks are "
                             "realisable from this skill's rules; used a shape its rules support"))
    out: list[tuple[Shape, str]] = []
    for shapes, reason in tiers:
        ranked = sorted(shapes, key=lambda s: (s.name in used, focus is not None and s.family != focus.family,
                                               s.name))
        out += [(s, reason) for s in ranked if all(s is not o for o, _ in out)]
    return out


def _usable(shape: Shape, c: Candidate) -> bool:
    accepts = getattr(shape, "accepts", None)
    return c.kind in shape.kinds and (accepts is None or accepts(c.predicate))


def pick_predicates(shape: Shape, cands: list[Candidate], level: int, variant: int,
                    focus: WorkflowFocus | None = None) -> list[Predicate]:
    """The predicates in play: the workflow's own rule first, then the family's best, rotated by variant so a
    skill's tasks vary; numbered R1…"""
    usable = [c for c in cands if _usable(shape, c)]
    if not usable:
        return []
    start = variant % len(usable)
    if focus is not None:
        start = next((i for i, c in enumerate(usable) if c.predicate.source.label == focus.source), start)
    rotated = usable[start:] + usable[:start]
    n = rules_for_level(level, len(rotated)) if getattr(shape, "max_preds", 4) > 1 else 1
    chosen: list[Candidate] = []
    for c in rotated:
        if len(chosen) == min(n, getattr(shape, "max_preds", 4)):
            break
        if _compatible(c, chosen):
            chosen.append(c)
    return [c.predicate.model_copy(update={"id": f"R{i + 1}"}) for i, c in enumerate(chosen)]


def _compatible(c: Candidate, chosen: list[Candidate]) -> bool:
    """One require-token rule at most, never with forbid/replace rules (they share one code field), no repeats."""
    kinds = [x.kind for x in chosen]
    if any(x.predicate.statement == c.predicate.statement and x.kind == c.kind for x in chosen):
        return False
    if c.kind == "limit" and any(x.kind == "limit" and _bound(x) == _bound(c) for x in chosen):
        return False  # the same bound restated elsewhere in the skill is one rule, not two
    tokens = {"forbid_token", "replace_token"}
    if c.kind == "require_token":
        return not ({"require_token"} | tokens) & set(kinds)
    if c.kind in tokens:
        return "require_token" not in kinds and c.predicate.params.get("token") not in \
            {x.predicate.params.get("token") for x in chosen}
    return True


def _bound(c: Candidate) -> tuple[object, ...]:
    k = c.predicate.params
    return k.get("unit"), k.get("comparator"), k.get("value")


def pick_effects(shape: Shape, sample: AxisSample, level: int, pool: PatternPool,
                 rng: random.Random) -> tuple[list[tuple[str, str, str]], str]:
    """[(effect, pattern id, dimension)] and the pattern fallback reason ('' when the sampled one is realised)."""
    sampled = pool.by_id(sample.difficulty_pattern)
    chosen: list[tuple[str, str, str]] = []
    reason = ""
    if sampled and sampled.effect in shape.effects:
        chosen.append((sampled.effect, sampled.id, sampled.dimension))
    else:
        alts = [p for p in pool.by_dimension(sample.capability_dimension) if p.effect in shape.effects]
        if alts:
            alt = rng.choice(sorted(alts, key=lambda p: p.id))
            chosen.append((alt.effect, alt.id, alt.dimension))
            reason = (f"{sample.difficulty_pattern} ({sampled.effect if sampled else 'unknown'}) has no realisation "
                      f"in {shape.name}; used {alt.id} from the same dimension")
        else:
            reason = f"{sample.difficulty_pattern} has no realisation in {shape.name} and no same-dimension pattern has"
    for pid in sample.added_patterns:  # hardening's additions keep every earlier round's pattern in play
        added = pool.by_id(pid)
        if added and added.effect in shape.effects and added.effect not in [e for e, _, _ in chosen]:
            chosen.append((added.effect, added.id, added.dimension))
    for lv in sorted(LEVEL_EFFECTS):
        if level >= lv:
            for effect in LEVEL_EFFECTS[lv]:
                if effect in shape.effects and effect not in [e for e, _, _ in chosen]:
                    p = sorted(pool.with_effect(effect), key=lambda x: x.id)[0]
                    chosen.append((effect, p.id, p.dimension))
                    break
    return chosen, reason


def plan_task(skill: SkillRecord, knowledge: SkillKnowledge, workflow: Workflow, sample: AxisSample,
              task_name: str, seed: int, vocabulary: list[str], used: Sequence[str] = (),
              focus: WorkflowFocus | None = None, prefer: str | None = None) -> Planned:
    """The blueprint and its design; raises NoShapeError (creator_contract_failed) when nothing can be built.
    `prefer` names a shape to try first (a hardening rebuild keeps its previous version's shape)."""
    text = SkillText(skill)
    fams = families(compile_candidates(knowledge, skill.skill_file, list(text.docs.values()),
                                       skill.name or skill.skill_id, {f.rel_path for f in skill.files}))
    pool = load_patterns()
    rng = random.Random(f"{seed}:blueprint")
    level = ("easy", "medium", "hard", "complex").index(sample.complexity)
    tried: list[str] = []
    order = sorted(shape_order(sample, fams, used, focus), key=lambda o: prefer is not None and o[0].name != prefer)
    for shape, reason in order:
        preds = pick_predicates(shape, fams.get(shape.family, []), level, sample.variant, focus)
        if not preds:
            continue
        effects, pattern_reason = pick_effects(shape, sample, level, pool, rng)
        design = None
        for attempt in range(SEED_ATTEMPTS):  # a world that cannot honour its invariants gets another seed
            inp = ShapeInput(skill, knowledge, workflow, sample, preds, [e for e, _, _ in effects],
                             seed + 7_919 * attempt, vocabulary, text)
            try:
                design = shape.design(inp)
                break
            except ShapeError as e:
                tried.append(f"{shape.name}: {e}")
                break
            except ValueError as e:
                if attempt == SEED_ATTEMPTS - 1:
                    tried.append(f"{shape.name}: {e}")
        if design is None:
            continue
        why = reason if not tried else f"{reason}; tried first: {' | '.join(tried)}"
        return Planned(_blueprint(task_name, skill, workflow, sample, design, preds, effects, why.strip("; "),
                                  pattern_reason), design)
    raise NoShapeError(ReasonCode.NO_CHECKABLE_RULE, "no shape can build a task from this skill's rules"
                  + (f" ({' | '.join(tried)})" if tried else " (no checkable rule found)"))


def _blueprint(task_name: str, skill: SkillRecord, workflow: Workflow, sample: AxisSample, d: Design,
               preds: list[Predicate], effects: list[tuple[str, str, str]], reason: str,
               pattern_reason: str) -> TaskBlueprint:
    by_effect = {e: (pid, dim) for e, pid, dim in effects}
    pool = load_patterns()
    for c in d.challenges:  # an effect the shape adds on its own (its world needs it) is recorded too
        if c.effect not in by_effect and pool.with_effect(c.effect):
            p = sorted(pool.with_effect(c.effect), key=lambda x: x.id)[0]
            by_effect[c.effect] = (p.id, p.dimension)
    graded = set(d.check.names)  # a metric dropped for the reward's size limit tests nothing
    challenges = [c.model_copy(update={"pattern": by_effect[c.effect][0], "dimension": by_effect[c.effect][1],
                                       "tested_by": [m for m in c.tested_by if m in graded]})
                  for c in d.challenges if c.effect in by_effect]
    missing = [e for e in by_effect if e not in {c.effect for c in challenges}]
    challenges += [Challenge(pattern=by_effect[e][0], dimension=by_effect[e][1], effect=e,
                             instantiation="realised implicitly by the shape's world", tested_by=[])
                   for e in missing]
    return TaskBlueprint(
        task_name=task_name, skill_id=skill.skill_id, workflow=workflow.name, objective=d.objective, shape=d.shape,
        archetype=d.archetype, primary_verifier_pattern=d.verifier, capability_dimension=sample.capability_dimension,
        axes=AxisRealisation(sampled_archetype=sample.archetype, sampled_verifier=sample.primary_verifier_pattern,
                             sampled_pattern=sample.difficulty_pattern, fallback_reason=reason,
                             pattern_fallback_reason=pattern_reason),
        predicates=preds, challenges=challenges, environment_facts=d.facts, boundary=d.boundary,
        acceptance=d.criteria(), complexity=d.complexity, docs=d.docs, deliverables=d.deliverables,
    )
