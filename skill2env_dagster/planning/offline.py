"""The deterministic offline planner: one workflow per rule of the skill that decides a task (`generator: offline`).

A workflow exists only where the compiler (`tasks/predicates/compile.py`) found a rule that, with its conditions,
decides the answer in an artifact of the kind the skill works on: per-category deadlines on records, limits on a
document part, a forbidden type in the skill's code, a documented local API. Its name and summary say what that
rule's task does, and its focus names the rule's line, so the task filed under it grades that rule (the gate's
static stage checks it). A skill with no such rule gets no workflow: the plan records `no_checkable_rule` and why
each stated rule was refused. No randomness, no clock: the same skill always gives the same plan.
"""

from __future__ import annotations

from skill2env_dagster.catalogue import AxisCatalogue, load_axes
from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.knowledge.source import read_docs
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.labels import to_label
from skill2env_dagster.models.plan import (
    AssetRecommendation,
    AssetSource,
    AxisCombo,
    Criteria,
    MetaPlan,
    Workflow,
    WorkflowFocus,
    WorkflowPlanSet,
)
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.planning.facts import SkillFacts
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.tasks.predicates.compile import Candidate, compile_skill
from skill2env_dagster.tasks.predicates.deadlines import plural
from skill2env_dagster.tasks.shapes import SHAPES

MAX_WORKFLOWS = 8


def _combos(c: Candidate) -> list[tuple[str, str]]:
    """The archetype/verifier combinations a shape can realise from this candidate predicate."""
    out: list[tuple[str, str]] = []
    for shape in SHAPES:
        accepts = getattr(shape, "accepts", None)
        fits = shape.family == c.family and c.kind in shape.kinds and (accepts is None or accepts(c.predicate))
        if fits and (shape.archetype, shape.verifier) not in out:
            out.append((shape.archetype, shape.verifier))
    return out


def _deadline(c: Candidate) -> tuple[str, str, MetaPlan]:
    k = c.predicate.params
    nouns = plural(k["noun"])
    limits = ", ".join(f"{d['category']} {d['amount']} {d['unit'].replace('_', ' ')}" for d in k["deadlines"])
    name = f"{k['noun']}-{k['event']}-limits"
    summary = (f"Find the {nouns} whose {k['event']} missed the limit the skill sets for their category "
               f"({limits}), each with its deadline.")
    plan = MetaPlan(
        scenario=f"An export of {nouns} is reviewed against the skill's {k['event']} limits.",
        initial_world=f"An export of {nouns} with their category, start and end times (open ones have no end) and "
                      "the export time; the skill's lines on the limits quoted under /app/docs.",
        planted_defects=["records just past and exactly at their limit", "open records before and after their limit",
                         "records within a laxer category's limit but past a stricter one's",
                         "timestamps written with other UTC offsets than their start",
                         "extensions, weekends and short months where the skill's units make them matter"],
        difficulty_source="Which limit applies depends on each record's category and the rule's unit; one clock "
                          "for every record, local clock readings or calendar days for business days give "
                          "another answer.",
        solution_sketch="Per record: its category's limit in the rule's unit from its start (extended where the "
                        "condition is met), compared with its end or the export time.",
        verifier_strategy="Jaccard of the late ids and exact deadlines, against our implementation of the rule.",
        risks=["A limit stated loosely is stated with its convention in the instruction."])
    return name, summary, plan


def _service(c: Candidate) -> tuple[str, str, MetaPlan]:
    p = c.predicate
    name = f"service-{p.params.get('collection') or p.subject}"
    summary = f"Load a batch through the skill's documented local API: {p.statement[:160]}"
    plan = MetaPlan(
        scenario="A batch of records must be created through the service the skill documents.",
        initial_world="A stand-in of the documented API in its own container, a batch file and existing records.",
        planted_defects=["records that already exist (on a later page)", "rows the service refuses",
                         "transient failures"],
        difficulty_source="The service's contract, paging and retry rules decide what gets created.",
        solution_sketch="Read existing records page by page, create the missing valid ones, retry per the skill.",
        verifier_strategy="The stand-in's request journal, replayed with the stub's own code.",
        risks=["The documented contract may be partial; the stub keeps to what the skill states."])
    return name, summary, plan


def _measures(c: Candidate) -> tuple[str, str, MetaPlan]:
    rules = c.predicate.params["rules"]
    parts = ", ".join(dict.fromkeys(r["part"].replace("_", " ") for r in rules))
    summary = f"Audit a repository of skill folders against the skill's own authoring rules ({parts}), each breach " \
              "with the value the rule measures."
    plan = MetaPlan(
        scenario="A team's skills are checked against the skill's authoring rules before they are published.",
        initial_world="Skill folders (SKILL.md with YAML front matter, some with reference files); the rules quoted "
                      "under /app/docs.",
        planted_defects=["lengths exactly at and one past each limit", "a long front matter with a compliant body",
                         "folded descriptions", "long reference files with and without a contents list"],
        difficulty_source="Each rule measures its own part with its own comparator; counting whole files or YAML "
                          "lines, or reading 'under' as 'at most', gives another answer.",
        solution_sketch="Parse each SKILL.md's front matter, measure each rule's part, compare with its bound.",
        verifier_strategy="Jaccard of (path, rule) pairs and exact measured values, against our implementation.",
        risks=["A rule stated loosely is stated with its reading in the instruction."])
    return "skill-folder-rules", summary, plan


def _commands(c: Candidate) -> tuple[str, str, MetaPlan]:
    k = c.predicate.params
    listed = ", ".join(p["text"] for p in k["patterns"])
    summary = f"Find the tool calls of agent session transcripts that the skill's guard blocks ({listed}), each " \
              "with the pattern that blocks it."
    plan = MetaPlan(
        scenario="A team adding the skill's command guard checks what it would have stopped in recent sessions.",
        initial_world="Agent session transcripts (JSON lines with Bash tool calls); the skill's blocked list quoted "
                      "under /app/docs.",
        planted_defects=["each blocked pattern with the arguments such calls carry", "a blocked command chained after "
                         "harmless ones", "look-alikes the patterns do not cover: the subcommand as an argument, a "
                         "flag in the other case, another argument, the pattern quoted in a message"],
        difficulty_source="A substring search finds the look-alikes too; only the pattern's words, read per simple "
                          "command, decide.",
        solution_sketch="Split each command line into simple commands, match each against the patterns.",
        verifier_strategy="Jaccard of (session, call) pairs and the blocking pattern, against our implementation.",
        risks=["A guard script may read patterns more loosely; the task states its reading."])
    return f"{k['program']}-command-guard", summary, plan


def _sqltypes(c: Candidate) -> tuple[str, str, MetaPlan]:
    types = c.predicate.params["types"]
    listed = ", ".join(t["spelling"] for t in types)
    summary = f"Find the columns of a schema's migrations declared with a type the skill forbids ({listed}), each " \
              "with the forbidden type as the skill spells it."
    plan = MetaPlan(
        scenario="A schema's migrations are checked against the skill's forbidden column types before a merge.",
        initial_world="CREATE TABLE migrations; the skill's list of forbidden types quoted under /app/docs.",
        planted_defects=["every forbidden type declared once, in lower and upper case", "allowed types that contain "
                         "a forbidden one's name", "columns named after a type", "types mentioned in comments"],
        difficulty_source="A grep for the type names finds comments, column names and allowed types too; only the "
                          "declared type, read with the list's spelling rules, decides.",
        solution_sketch="Parse each CREATE TABLE column's declared type and match it against the list.",
        verifier_strategy="Jaccard of (file, table, column) and the spelling named, against our implementation.",
        risks=["Types the list names loosely are stated with their reading in the instruction."])
    return "forbidden-column-types", summary, plan


def _flags(c: Candidate) -> tuple[str, str, MetaPlan]:
    labels = ", ".join(f["label"] for f in c.predicate.params["flags"])
    summary = f"Raise the skill's review flags ({labels}) on a month's ledger export, each read with its condition."
    plan = MetaPlan(
        scenario="A month's ledger is reviewed with the skill's flags before it is closed.",
        initial_world="A ledger export (date, vendor, amount, category, attachment...); the flags quoted under "
                      "/app/docs.",
        planted_defects=["amounts at and just past a bound", "duplicates at and one day past the window",
                         "look-alike pairs equal in one field only", "empty fields on entries no flag covers"],
        difficulty_source="Each flag's condition decides exactly: 'above' leaves the bound out, 'within' takes it "
                          "in, a duplicate needs both fields equal.",
        solution_sketch="Apply each flag's condition to every entry (and pair of entries).",
        verifier_strategy="Jaccard of (entry, flag) pairs, overall and per flag, against our implementation.",
        risks=["Flags stated loosely are stated with their reading in the instruction."])
    return "ledger-review-flags", summary, plan


FAMILIES = {"deadlines": _deadline, "measures": _measures, "commands": _commands, "sqltypes": _sqltypes,
            "flags": _flags, "service": _service}


def _workflow(skill: SkillRecord, c: Candidate, personas: list[str], rank: int) -> Workflow | None:
    combos = _combos(c)
    make = FAMILIES.get(c.family)
    if not combos or make is None:
        return None
    name, summary, plan = make(c)
    p = c.predicate
    return Workflow(
        rank=rank, name=to_label(name[:48]), summary=summary,
        criteria=Criteria(verifiable=5, well_specified=5, solvable_in_hours=4, hard_for_good_reason=4,
                          realistic=4, outcome_graded=5, rationale=plan.difficulty_source),
        meta_plan=plan,
        assets=[AssetRecommendation(purpose="the rule's text", kind="document",
                                    sources=[AssetSource(kind="skill_file", path=p.source.file,
                                                         revision=skill.bundle_digest)],
                                    composition=f"Quote {p.source.label} (and the lines of the rule's other "
                                                "categories) into the task's docs.",
                                    fallback="None: without the rule there is no task.")],
        axis_pool=[AxisCombo(archetype=a, primary_verifier_pattern=v, persona=personas[i % len(personas)])
                   for i, (a, v) in enumerate(combos[:4])],
        focus=WorkflowFocus(family=c.family, source=p.source.label),
    )


def plan_offline(
    skill: SkillRecord,
    *,
    prompt_version: str,
    catalogue: AxisCatalogue | None = None,
    facts: SkillFacts | None = None,
    knowledge: SkillKnowledge | None = None,
) -> WorkflowPlanSet:
    """Deterministic, rule-decided workflows from the skill's own text, labelled `generator: offline`; none (with
    the reason and the refusals) when no rule of the skill decides a task. `facts` is accepted for callers that
    computed them; the plan is made from the compiled rules alone."""
    k = knowledge or extract_knowledge(skill)
    personas = (catalogue or load_axes()).personas_for(skill.domain)
    compiled = compile_skill(k, skill.skill_file, read_docs(skill, specs=True), skill.name or skill.skill_id,
                             {f.rel_path for f in skill.files})
    workflows: list[Workflow] = []
    names: set[str] = set()
    for c in compiled.candidates:
        w = _workflow(skill, c, personas, len(workflows) + 1)
        if w is None or w.name in names:
            continue
        names.add(w.name)
        workflows.append(w)
        if len(workflows) == MAX_WORKFLOWS:
            break
    return WorkflowPlanSet(
        skill_id=skill.skill_id, bundle_digest=skill.bundle_digest, generator="offline", model=None,
        prompt_version=prompt_version, workflows=workflows,
        skipped_reason=None if workflows else ReasonCode.NO_CHECKABLE_RULE,
        refusals=[] if workflows else compiled.refusals or ["no rule with a limit, a forbidden token, a document "
                                                            "measure or a local API was found"],
    )
