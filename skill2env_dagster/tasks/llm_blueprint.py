"""The model-backed blueprint: what the blueprint prompt is given and how its reply becomes a `TaskBlueprint`.

The reply's schema is made per task, so that the rules it may cite and the difficulty patterns it may instantiate
are enums in the schema the server sees: a rule's `source` is one of the skill lines the extractor found (so every
predicate keeps a real, verbatim `SourceRef`), a challenge's `pattern` is the sampled one or another pattern of the
sampled capability dimension (the offline fallback rule). Everything else that could disagree (a metric named twice,
a rule id that does not exist) is dropped on conversion rather than refused, so the schema stays the whole contract.
The realised archetype and verifier pattern are the sampled ones by construction (the model-backed environment
takes them from the sample); a pattern that is not instantiated is recorded with the model's reason, or ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args

from pydantic import AfterValidator, Field, StringConstraints, create_model

from skill2env_dagster.catalogue import DifficultyPattern, load_patterns
from skill2env_dagster.knowledge.source import read_skill_file
from skill2env_dagster.llm.schema import ReplyModel
from skill2env_dagster.models.blueprint import (
    AxisRealisation,
    Challenge,
    Complexity,
    Criterion,
    InformationBoundary,
    Predicate,
    PredicateKind,
    TaskBlueprint,
)
from skill2env_dagster.models.knowledge import ArtifactRole, SkillKnowledge, SourceRef
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError
from skill2env_dagster.tasks.generator import CreationContext
from skill2env_dagster.tasks.llm_replies import Metric

MAX_ITEMS = 60  # skill lines offered to the model (and in the schema's enum)
ITEM_CHARS = 240
FILE_CHARS = 3_000  # per quoted skill file besides SKILL.md
FILES_CHARS = 12_000  # all of them together
FILES_LISTED = 40  # files named at most (shown or not)
ROLE_ORDER = get_args(ArtifactRole)  # data, templates, configs, schemas, scripts first: quoted in this order
SHAPE = "llm"  # TaskBlueprint.shape of a model-written task: no offline shape realises it

Line = Annotated[str, StringConstraints(min_length=1, max_length=300)]
ContainerPath = Annotated[str, StringConstraints(pattern=r"^/[A-Za-z0-9._/-]{1,200}$")]
RuleId = Annotated[str, StringConstraints(pattern=r"^R\d{1,2}$")]


class NoRuleError(Skill2EnvError):
    """The skill has no extracted line the blueprint could cite (the offline generator's no_checkable_rule)."""


class BlueprintRule(ReplyModel):
    kind: PredicateKind
    subject: str = Field(min_length=1, max_length=200, description="What the rule applies to, in the skill's words.")
    statement: str = Field(min_length=1, max_length=400, description="The rule as the skill states it.")
    exception: str = Field(default="", max_length=200, description="The skill's own exception clause, if any.")
    source: str = Field(description="The skill line the rule comes from (file:line, from the list given).")


class BlueprintChallenge(ReplyModel):
    pattern: str = Field(description="Difficulty pattern id (from the list given).")
    instantiation: str = Field(min_length=1, max_length=400, description="What it is in this task's world.")
    tested_by: list[Metric] = Field(default_factory=list, max_length=6, description="Metrics that see it handled.")


class BlueprintCriterion(ReplyModel):
    metric: Metric
    checks: str = Field(min_length=1, max_length=300, description="What the metric measures, one sentence.")
    rules: list[RuleId] = Field(default_factory=list, max_length=6, description="Ids (R1…) of the rules it grades.")


class BlueprintBoundary(ReplyModel):
    stated: list[Line] = Field(min_length=1, max_length=8, description="What the instruction says outright.")
    discover: list[Line] = Field(min_length=1, max_length=8, description="What the solver must find or infer.")


class BlueprintSteps(ReplyModel):
    files_to_read: int = Field(ge=1, le=50)
    dependent_steps: int = Field(ge=1, le=20, description="Stages whose input is an earlier stage's output, plus one.")
    items: int = Field(ge=1, le=100_000, description="Records, runs, cases or documents the solver must handle.")


class BlueprintReply(ReplyModel):
    """The blueprint as the model writes it; rules are numbered R1… in the order given."""

    objective: str = Field(min_length=20, max_length=600)
    rules: list[BlueprintRule] = Field(min_length=1, max_length=6)
    challenges: list[BlueprintChallenge] = Field(min_length=1, max_length=4)
    pattern_fallback_reason: str = Field(default="", max_length=400, description="Why the sampled pattern is not "
                                         "instantiated (empty when it is).")
    environment_facts: list[Line] = Field(min_length=1, max_length=12)
    boundary: BlueprintBoundary
    acceptance: list[BlueprintCriterion] = Field(min_length=2, max_length=6)
    complexity: BlueprintSteps
    deliverables: list[ContainerPath] = Field(min_length=1, max_length=8, description="Paths the solver produces.")
    docs: list[ContainerPath] = Field(default_factory=list, max_length=8,
                                      description="Container paths of skill excerpts shipped as documentation.")


def _one_of(values: Sequence[str]) -> Callable[[str], str]:
    allowed = frozenset(values)

    def check(v: str) -> str:
        if v not in allowed:
            raise ValueError(f"{v!r} is not one of the values listed")
        return v
    return check


def _enum(values: Sequence[str]) -> Any:  # a type form built at run time: no static type to give it
    """A str field limited to `values`, with the enum in the JSON schema (values are only known per task)."""
    return Annotated[str, Field(json_schema_extra={"enum": list(values)}), AfterValidator(_one_of(values))]


def blueprint_reply(sources: Sequence[str], patterns: Sequence[str]) -> type[BlueprintReply]:
    """BlueprintReply whose rule sources and challenge patterns are this task's enums (same class names, so the
    wire schema is still named BlueprintReply)."""
    rule = create_model("BlueprintRule", __base__=BlueprintRule, source=(_enum(sources), ...))
    challenge = create_model("BlueprintChallenge", __base__=BlueprintChallenge, pattern=(_enum(patterns), ...))
    rules: Any = list[rule]  # type: ignore[valid-type]  # a model class made at run time, just above
    challenges: Any = list[challenge]  # type: ignore[valid-type]  # idem
    return create_model("BlueprintReply", __base__=BlueprintReply, rules=(rules, Field(min_length=1, max_length=6)),
                        challenges=(challenges, Field(min_length=1, max_length=4)))


@dataclass
class BlueprintInputs:
    """What one task's blueprint prompt offers: the skill lines by label, the patterns, the skill's other files."""

    lines: dict[str, tuple[str, SourceRef]]  # label -> ("kind: text", ref)
    patterns: list[DifficultyPattern]  # the sampled one first, then the required ones, then the rest
    required: list[str] = field(default_factory=list)  # added by hardening rounds: each must be instantiated

    def schema(self) -> type[BlueprintReply]:
        return blueprint_reply(list(self.lines), [p.id for p in self.patterns])

    def listing(self) -> str:
        return "\n".join(f"{label}  {text}" for label, (text, _) in self.lines.items())


def knowledge_lines(k: SkillKnowledge) -> dict[str, tuple[str, SourceRef]]:
    """The skill's extracted rules, limits, defaults, pitfalls, procedures and conventions, one per line label (the
    first item on a line wins), bounded: the rules the blueprint may put in play."""
    items: list[tuple[str, str, SourceRef]] = []
    items += [(r.modality, r.text + (f" (except {r.exception})" if r.exception else ""), r.ref) for r in k.rules]
    items += [("pitfall" if p.kind == "pitfall" else "exclusion", p.text, p.ref) for p in k.pitfalls]
    items += [("limit", t.text, t.ref) for t in k.thresholds]
    items += [("default", f"{d.key} = {d.value}: {d.text}", d.ref) for d in k.defaults]
    items += [(f"token_{t.polarity}", t.text, t.ref) for t in k.token_rules]
    items += [("convention", c.text, c.ref) for c in k.conventions]
    items += [(f"step {s.n} of {p.title!r}", s.text, s.ref) for p in k.procedures for s in p.steps]
    items += [(f"checklist {c.title!r}", i.text, i.ref) for c in k.checklists for i in c.items]
    items += [(f"template {t.title!r}", "headings: " + ", ".join(t.headings), t.ref) for t in k.templates]
    out: dict[str, tuple[str, SourceRef]] = {}
    for kind, text, ref in items:
        if len(out) >= MAX_ITEMS:
            break
        out.setdefault(ref.label, (f"{kind}: {' '.join(text.split())[:ITEM_CHARS]}", ref))
    return out


def blueprint_inputs(ctx: CreationContext, knowledge: SkillKnowledge) -> BlueprintInputs:
    lines = knowledge_lines(knowledge)
    if not lines:
        raise NoRuleError(ReasonCode.NO_CHECKABLE_RULE, "the skill states no rule, limit, default or pitfall the "
                          "blueprint could cite")
    pool = load_patterns()
    sampled = pool.by_id(ctx.sample.difficulty_pattern)
    # A hardening round's additions (any dimension) are kept in play with every earlier round's: required.
    required = [p for pid in ctx.sample.added_patterns if (p := pool.by_id(pid)) is not None and p is not sampled]
    same = [p for p in pool.by_dimension(ctx.sample.capability_dimension) if p is not sampled and p not in required]
    return BlueprintInputs(lines, ([sampled] if sampled else []) + required + sorted(same, key=lambda p: p.id),
                           [p.id for p in required])


def skill_files(skill: SkillRecord, knowledge: SkillKnowledge) -> str:
    """The skill's other text files (documents, data, templates, configs, schemas, scripts), each quoted up to
    FILE_CHARS and all of them up to FILES_CHARS, the skill's own material (data, templates, configs) first; binary
    files, and files past the budget, are named only (at most FILES_LISTED names)."""
    parts: list[str] = []
    total = 0
    others = sorted((a for a in knowledge.artifacts if a.path != skill.skill_file),
                    key=lambda a: (not a.text, ROLE_ORDER.index(a.role), a.path))
    for a in others[:FILES_LISTED]:
        text = read_skill_file(skill, a.path) if a.text and total < FILES_CHARS else None
        if text is None:
            parts.append(f"--- {a.path} ({a.role}, {a.size} bytes, not shown)")
            continue
        shown = text[: min(FILE_CHARS, FILES_CHARS - total)]
        total += len(shown)
        cut = "" if len(shown) == len(text) else f" (first {len(shown)} of {len(text)} characters)"
        parts.append(f"--- {a.path} ({a.role}){cut}\n{shown}")
    if len(others) > FILES_LISTED:
        parts.append(f"--- and {len(others) - FILES_LISTED} more files, not shown")
    return "\n".join(parts)


def to_blueprint(reply: BlueprintReply, ctx: CreationContext, inputs: BlueprintInputs) -> TaskBlueprint:
    """The stored contract: rules numbered R1… with their skill lines, each pattern with its dimension and effect,
    criteria and challenges limited to the metrics and rules that exist."""
    s = ctx.sample
    preds = [Predicate(id=f"R{i + 1}", kind=r.kind, subject=r.subject, statement=r.statement, exception=r.exception,
                       source=inputs.lines[r.source][1]) for i, r in enumerate(reply.rules)]
    ids = {p.id for p in preds}
    acceptance: list[Criterion] = []
    for c in reply.acceptance:
        if c.metric not in {a.metric for a in acceptance}:
            acceptance.append(Criterion(metric=c.metric, checks=c.checks, predicates=[r for r in c.rules if r in ids]))
    metrics = {a.metric for a in acceptance}
    pool = {p.id: p for p in inputs.patterns}
    challenges = [Challenge(pattern=c.pattern, dimension=pool[c.pattern].dimension, effect=pool[c.pattern].effect,
                            instantiation=c.instantiation, tested_by=[m for m in c.tested_by if m in metrics])
                  for c in reply.challenges]
    realised = s.difficulty_pattern in {c.pattern for c in challenges}
    pattern_reason = "" if realised else (reply.pattern_fallback_reason.strip() or
                                          f"the model did not instantiate {s.difficulty_pattern} and gave no reason")
    dropped = [p for p in inputs.required if p not in {c.pattern for c in challenges}]
    if dropped:  # recorded; the hardening round's replay check then decides whether the rebuild is harder
        pattern_reason = "; ".join(filter(None, [pattern_reason, "required by hardening but not instantiated: "
                                                 + ", ".join(dropped)]))
    return TaskBlueprint(
        task_name=ctx.task_name, skill_id=ctx.skill.skill_id, workflow=ctx.workflow.name, objective=reply.objective,
        shape=SHAPE, archetype=s.archetype, primary_verifier_pattern=s.primary_verifier_pattern,
        capability_dimension=s.capability_dimension,
        axes=AxisRealisation(sampled_archetype=s.archetype, sampled_verifier=s.primary_verifier_pattern,
                             sampled_pattern=s.difficulty_pattern, pattern_fallback_reason=pattern_reason),
        predicates=preds, challenges=challenges, environment_facts=list(reply.environment_facts),
        boundary=InformationBoundary(stated=list(reply.boundary.stated), discover=list(reply.boundary.discover)),
        acceptance=acceptance,
        complexity=Complexity(level=s.complexity, files_to_read=reply.complexity.files_to_read,
                              rules_in_play=len(preds), dependent_steps=reply.complexity.dependent_steps,
                              items=reply.complexity.items),
        docs=list(reply.docs), deliverables=list(reply.deliverables),
    )
