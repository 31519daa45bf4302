"""The deterministic offline planner: workflows built only from a skill's own content (`generator: offline`).

Each candidate builder looks at one kind of evidence — helper scripts, data files and tables, documented shell
commands, reference documents, templates/assets, procedure sections, stated rules — and proposes a workflow that
names and cites that evidence. Skills with different content therefore get different workflows, not one template
with the name swapped. Candidates are scored on the six planner criteria from how much checkable evidence backs
them, ranked, and the best eight kept. No randomness, no clock: the same skill always gives the same plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import PurePosixPath

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
from skill2env_dagster.planning.facts import SkillFacts, extract_facts
from skill2env_dagster.tasks.predicates.compile import Candidate, compile_candidates, families
from skill2env_dagster.tasks.shapes import SHAPES

MAX_WORKFLOWS = 8
LANG_VERIFIER = {
    "python": "differential_equivalence",
    "py": "differential_equivalence",
    "sql": "exact_state",
    "javascript": "regression_suite",
    "js": "regression_suite",
    "typescript": "regression_suite",
    "ts": "regression_suite",
    "json": "protocol_conformance",
    "yaml": "exact_state",
    "html": "rendered_artifact",
    "css": "rendered_artifact",
    "xml": "protocol_conformance",
    "r": "metric_threshold",
    "go": "regression_suite",
}


class _Ctx:
    """What every builder needs: the skill, its facts and knowledge, personas for its domain, a source citer."""

    def __init__(
        self, skill: SkillRecord, facts: SkillFacts, catalogue: AxisCatalogue, knowledge: SkillKnowledge
    ) -> None:
        self.skill, self.facts, self.knowledge = skill, facts, knowledge
        self.personas = catalogue.personas_for(skill.domain)
        self.topic = ", ".join(facts.vocabulary[:3]) or (skill.name or skill.skill_id)

    def cite(self, rel: str) -> AssetSource:
        return AssetSource(kind="skill_file", path=rel, revision=self.skill.bundle_digest)

    def pool(self, *pairs: tuple[str, str]) -> list[AxisCombo]:
        return [
            AxisCombo(archetype=a, primary_verifier_pattern=v, persona=self.personas[i % len(self.personas)])
            for i, (a, v) in enumerate(pairs[:4])
        ]

    def rule(self, i: int = 0) -> str | None:
        return self.facts.rules[i] if len(self.facts.rules) > i else None


def _criteria(evidence: int, hard: int, rationale: str) -> Criteria:
    """Scores rise with checkable evidence (files, headers, commands) and with a named source of difficulty."""
    e = max(1, min(5, evidence))
    return Criteria(
        verifiable=min(5, 2 + e // 2),
        well_specified=min(5, 2 + e // 2),
        solvable_in_hours=4,
        hard_for_good_reason=max(1, min(5, hard)),
        realistic=min(5, 3 + e // 3),
        outcome_graded=min(5, 3 + e // 3),
        rationale=rationale,
    )


def _scripts(c: _Ctx) -> list[Workflow]:
    out = []
    scripts = [
        r
        for r in c.facts.files_by_area.get("scripts", [])
        if PurePosixPath(r).suffix in (".py", ".sh", ".js", ".ts", ".rb", ".go", ".r", ".pl")
    ]
    for rel in scripts[:2]:
        stem = PurePosixPath(rel).stem
        fns = c.facts.script_functions.get(rel, [])
        fn_text = f" (entry points: {', '.join(fns[:4])})" if fns else ""
        out.append(
            Workflow(
                rank=1,
                name=to_label(f"repair-{stem}"),
                summary=f"Find and fix a planted fault in a working copy of {rel}{fn_text}.",
                criteria=_criteria(
                    3 + bool(fns) + bool(c.facts.data_files),
                    4,
                    f"The fault in {rel} only shows on inputs that exercise {c.topic}; the symptom points elsewhere.",
                ),
                meta_plan=MetaPlan(
                    scenario=(
                        f"A teammate vendored {rel} from the {c.facts.name} skill and its output is now wrong on real "
                        f"inputs."
                    ),
                    initial_world=(
                        f"A project folder with a copy of {rel}, sample inputs and a failing end-to-end check."
                    ),
                    planted_defects=[
                        f"one logic fault in {fns[0] if fns else stem} that corrupts a subset of outputs",
                        "an input file with edge-case records the original handles correctly",
                    ],
                    difficulty_source=(
                        "The visible error is downstream of the fault; fixing it needs the behaviour the skill "
                        "documents."
                    ),
                    solution_sketch=f"Reproduce, localise the fault in {rel}, fix it minimally, re-run on all inputs.",
                    verifier_strategy=(
                        "Hidden regression inputs compared with outputs of the pristine script; untouched lines "
                        "diffed."
                    ),
                    risks=[f"{rel} may need packages absent offline; pin them in the image or pick another script."],
                ),
                assets=[
                    AssetRecommendation(
                        purpose="the program under repair",
                        kind="script",
                        sources=[c.cite(rel)],
                        composition=f"Copy {rel} and inject one fault.",
                        fallback=f"Write a small program implementing what {rel} is documented to do.",
                    )
                ],
                axis_pool=c.pool(("repair_debug", "regression_suite"), ("repo_change", "differential_equivalence")),
            )
        )
    return out


def _data(c: _Ctx) -> list[Workflow]:
    out = []
    for rel, header in list(c.facts.csv_headers.items())[:1]:
        cols = ", ".join(header[:5])
        out.append(
            Workflow(
                rank=1,
                name=to_label(f"query-{PurePosixPath(rel).stem}"),
                summary=f"Answer a business question from {rel} (columns {cols}) with a reproducible query.",
                criteria=_criteria(5, 3, f"Rows in {rel} need the skill's handling of {cols} before aggregating."),
                meta_plan=MetaPlan(
                    scenario=(
                        f"A stakeholder needs figures computed from {rel} following the {c.facts.name} conventions."
                    ),
                    initial_world=f"{rel} extended with seeded rows, plus a results/ folder to write to.",
                    planted_defects=[
                        "duplicated and malformed rows",
                        f"inconsistent units or formats in {header[0] if header else 'one column'}",
                    ],
                    difficulty_source=(
                        "Cleaning rules from the skill change the totals; a naive aggregate is close but wrong."
                    ),
                    solution_sketch="Load, clean per the skill's rules, aggregate, write results as specified.",
                    verifier_strategy="Exact expected values recomputed by the test from the seeded data.",
                    risks=["Seeded data must keep the original column semantics."],
                ),
                assets=[
                    AssetRecommendation(
                        purpose="input table",
                        kind="fixture_data",
                        sources=[c.cite(rel)],
                        composition="Use the header and sample rows; add seeded rows with planted defects.",
                        fallback=f"Synthesise a table with columns {cols}.",
                    )
                ],
                axis_pool=c.pool(("data_query", "exact_state"), ("transform_convert", "metric_threshold")),
            )
        )
    if c.facts.tables and not out:
        cols = ", ".join(c.facts.tables[0][:5])
        out.append(
            Workflow(
                rank=1,
                name=to_label(f"apply-table-{cols.split(',')[0]}"),
                summary=(
                    f"Apply the skill's reference table ({cols}) to a batch of cases and record the outcome per case."
                ),
                criteria=_criteria(3, 3, f"Each case must be matched to the right row of the table on {cols}."),
                meta_plan=MetaPlan(
                    scenario=f"A batch of cases must be classified using the {c.facts.name} reference table.",
                    initial_world="A cases file (CSV) and an output template; the table is quoted in a docs/ file.",
                    planted_defects=[
                        "cases on the boundary between two table rows",
                        "one case the table does not cover",
                    ],
                    difficulty_source="Boundary cases need the table's exact semantics rather than a keyword match.",
                    solution_sketch="Parse cases, look each up by the table's columns, write the outcome file.",
                    verifier_strategy="Per-case expected outcome computed from the table in the test.",
                    risks=["The table may be illustrative rather than normative."],
                ),
                assets=[
                    AssetRecommendation(
                        purpose="normative table",
                        kind="document",
                        sources=[c.cite(c.skill.skill_file)],
                        composition="Quote the table into docs/ of the task.",
                        fallback=f"Write a table with columns {cols} from the skill text.",
                    )
                ],
                axis_pool=c.pool(("data_query", "exact_state"), ("plan_decide", "evidence_traceability")),
            )
        )
    return out


def _commands(c: _Ctx) -> list[Workflow]:
    if not c.facts.tools:
        return []
    tool = next(iter(c.facts.tools))
    cmds = [x for x in c.facts.commands if x.split()[0] == tool][:3]
    return [
        Workflow(
            rank=1,
            name=to_label(f"operate-{tool}"),
            summary=(
                f"Bring a seeded workspace into a target state with {tool}, "
                f"as the skill documents ({'; '.join(cmds)[:160]})."
            ),
            criteria=_criteria(
                2 + min(3, len(cmds)), 3, f"The right {tool} invocation depends on state the agent must inspect first."
            ),
            meta_plan=MetaPlan(
                scenario=f"An operator follows the {c.facts.name} skill to finish a half-done job using {tool}.",
                initial_world=f"A container with {tool} installed and a workspace partly processed.",
                planted_defects=[
                    "one step already applied (must not be applied twice)",
                    "a wrong option in a saved script",
                ],
                difficulty_source=f"Order and options of the {tool} steps matter; re-running blindly breaks the state.",
                solution_sketch=f"Inspect state, run the missing {tool} steps with correct options, verify.",
                verifier_strategy="Check the final files/state exactly; check no step was applied twice.",
                risks=[f"{tool} must install offline in the image; network-only commands are excluded."],
            ),
            assets=[
                AssetRecommendation(
                    purpose="documented procedure",
                    kind="document",
                    sources=[c.cite(c.skill.skill_file)],
                    composition="Extract the command sequence as the reference procedure.",
                    fallback=f"Write a minimal {tool} workflow from the commands listed.",
                )
            ],
            axis_pool=c.pool(("operate_configure", "exact_state"), ("system_build_repair", "regression_suite")),
        )
    ]


def _references(c: _Ctx) -> list[Workflow]:
    refs = [r for r in c.facts.files_by_area.get("references", []) if r.lower().endswith((".md", ".txt", ".rst"))]
    if not refs:
        return []
    rel = refs[0]
    stem = PurePosixPath(rel).stem
    return [
        Workflow(
            rank=1,
            name=to_label(f"audit-against-{stem}"),
            summary=f"Audit a supplied artefact against the guidance in {rel} and report each violation with evidence.",
            criteria=_criteria(
                3 + (len(refs) > 1), 4, f"Violations are only recognisable with the rules in {rel}, not generic advice."
            ),
            meta_plan=MetaPlan(
                scenario=f"A reviewer must check a deliverable against the {c.facts.name} guidance before release.",
                initial_world=(
                    f"The guidance ({', '.join(refs[:3])}) under docs/, an artefact to review, a findings template."
                ),
                planted_defects=["three violations of specific rules", "one look-alike that is actually compliant"],
                difficulty_source="Separating true violations from compliant look-alikes needs the exact rule text.",
                solution_sketch=(
                    "Read the guidance, check the artefact rule by rule, cite rule and location per finding."
                ),
                verifier_strategy=(
                    "Findings file must list exactly the planted violations, each citing the right rule id/section."
                ),
                risks=["Guidance may be too vague to yield unambiguous violations; choose crisp rules."],
            ),
            assets=[
                AssetRecommendation(
                    purpose="guidance",
                    kind="document",
                    sources=[c.cite(r) for r in refs[:3]],
                    composition="Ship the guidance as docs; derive the artefact from it with planted violations.",
                    fallback="Summarise the SKILL.md rules into a numbered guideline file.",
                )
            ],
            axis_pool=c.pool(
                ("audit_report", "evidence_traceability"),
                ("investigate_synthesize", "evidence_traceability"),
                ("harden_secure", "adversarial_corpus"),
            ),
        )
    ]


def _templates(c: _Ctx) -> list[Workflow]:
    files = c.facts.files_by_area.get("templates", []) + c.facts.files_by_area.get("assets", [])
    if not files:
        return []
    rel = files[0]
    ext = PurePosixPath(rel).suffix.lower()
    verifier = (
        "rendered_artifact" if ext in (".html", ".svg", ".png", ".pptx", ".docx", ".pdf", ".css") else "exact_state"
    )
    return [
        Workflow(
            rank=1,
            name=to_label(f"author-from-{PurePosixPath(rel).stem}"),
            summary=f"Produce a deliverable from {rel} that satisfies a brief's checkable constraints.",
            criteria=_criteria(3, 3, f"The brief's constraints interact with the structure of {rel}."),
            meta_plan=MetaPlan(
                scenario=f"A team uses the {c.facts.name} skill's {rel} to produce a deliverable for a new brief.",
                initial_world=f"{rel} and a brief listing required content, limits and naming.",
                planted_defects=["a brief requirement that conflicts with the template default"],
                difficulty_source=(
                    "Filling the template is easy; meeting every constraint without breaking its structure is not."
                ),
                solution_sketch=f"Start from {rel}, apply each brief constraint, validate the structure.",
                verifier_strategy=(
                    f"Parse the output; check structure inherited from {rel} and each constraint ({verifier})."
                ),
                risks=["Binary templates may need a parser library in the image."],
            ),
            assets=[
                AssetRecommendation(
                    purpose="starting template",
                    kind="config" if ext in (".json", ".yaml", ".yml", ".toml") else "document",
                    sources=[c.cite(r) for r in files[:2]],
                    composition="Provide as-is.",
                    fallback="Synthesise a template with the same sections.",
                )
            ],
            axis_pool=c.pool(
                ("author_to_constraints", verifier),
                ("edit_preserve", "exact_state"),
                ("creative_build", "rendered_artifact"),
            ),
        )
    ]


def _sections(c: _Ctx) -> list[Workflow]:
    out = []
    lang = next(iter(c.facts.languages), "")
    verifier = LANG_VERIFIER.get(lang, "exact_state")
    for title in c.facts.sections[:3]:
        label = to_label(title)
        out.append(
            Workflow(
                rank=1,
                name=label,
                summary=f'Carry out the skill\'s "{title}" procedure on a realistic input about {c.topic}.',
                criteria=_criteria(
                    2 + bool(lang) + bool(c.facts.rules),
                    3,
                    f'"{title}" has a step whose correctness depends on the skill\'s own conventions.',
                ),
                meta_plan=MetaPlan(
                    scenario=f'Someone asks for "{title}" to be done for their project, following {c.facts.name}.',
                    initial_world=f'A workspace with inputs matching the section "{title}"'
                    + (f" and {lang} code" if lang else "")
                    + ".",
                    planted_defects=["an input detail that makes the default approach wrong"],
                    difficulty_source=c.rule()
                    or f"The section's conventions about {c.topic} decide the right outcome.",
                    solution_sketch=f'Follow "{title}" adapted to the inputs; produce the requested output files.',
                    verifier_strategy=f"Tests check the outputs' properties ({verifier}), not the steps taken.",
                    risks=["The section may describe judgement rather than checkable output."],
                ),
                assets=[
                    AssetRecommendation(
                        purpose="procedure text",
                        kind="document",
                        sources=[c.cite(c.skill.skill_file)],
                        composition=f'Use the "{title}" section to design inputs and expected outputs.',
                        fallback="Write inputs by hand from the section text.",
                    )
                ],
                axis_pool=c.pool(("build_to_spec", verifier), ("transform_convert", "metamorphic_invariants")),
            )
        )
    return out


def _review(c: _Ctx) -> list[Workflow]:
    """Always available: review an artefact against the skill's stated rules (or its headings)."""
    rules = c.facts.rules[:3] or [h.lstrip("# ") for h in c.facts.headings[:3]] or [c.skill.description or c.facts.name]
    return [
        Workflow(
            rank=1,
            name=to_label(f"review-{c.facts.name}-practice"),
            summary=f"Review a flawed {c.topic} deliverable against the {c.facts.name} practices and fix it.",
            criteria=_criteria(
                1 + len(c.facts.rules[:3]),
                2 + bool(c.facts.rules),
                f"The flaws violate the skill's own rules, e.g. {rules[0][:120]!r}.",
            ),
            meta_plan=MetaPlan(
                scenario=f"A deliverable about {c.topic} ignores parts of the {c.facts.name} practice.",
                initial_world="The deliverable, a short brief, and a findings file to complete.",
                planted_defects=[f"violates: {r[:140]}" for r in rules],
                difficulty_source="Each flaw is plausible on its own; only the skill's rules mark it as wrong.",
                solution_sketch="List each violated rule with location, then fix the deliverable.",
                verifier_strategy=(
                    "Findings must name the planted violations; the fixed deliverable must pass structural checks."
                ),
                risks=["Rules phrased as judgement may not be checkable; keep only crisp ones."],
            ),
            assets=[
                AssetRecommendation(
                    purpose="rules",
                    kind="document",
                    sources=[c.cite(c.skill.skill_file)],
                    composition="Quote the rules into the task's docs.",
                    fallback="Paraphrase the skill's headings as rules.",
                )
            ],
            axis_pool=c.pool(("audit_report", "evidence_traceability"), ("edit_preserve", "exact_state")),
        )
    ]


FAMILY_TASK = {
    "entries": (
        "check records against the playbook's rule",
        "Records that break the rule look like ones that do "
        "not; boundary values, near misses and the rule's own exceptions decide.",
    ),
    "procedure": (
        "follow the playbook's procedure",
        "The step order and which steps are optional are only in the "
        "playbook; retries, skipped optional steps and late repeats decide compliance.",
    ),
    "checklist": ("cover the playbook's checklist", "Every required item must be covered; the checklist decides."),
    "table": (
        "decide cases with the playbook's reference table",
        "Near-miss keys and notes without a signal word must not be guessed; the table decides each case.",
    ),
    "template": (
        "write deliverables in the playbook's template",
        "The template's sections and their order are the playbook's; content must land under the right section.",
    ),
    "service": (
        "work through the skill's documented local API",
        "The service's contract, paging and retry rules decide what gets created; duplicates, rejected rows and "
        "transient failures must be handled.",
    ),
    "defaults": (
        "complete settings with the playbook's defaults",
        "Explicit values win over the documented defaults; missing keys take them.",
    ),
}


def _combos(c: Candidate) -> list[tuple[str, str]]:
    """The archetype/verifier combinations a shape can realise from this candidate predicate."""
    out: list[tuple[str, str]] = []
    for shape in SHAPES:
        accepts = getattr(shape, "accepts", None)
        fits = shape.family == c.family and c.kind in shape.kinds and (accepts is None or accepts(c.predicate))
        if fits and (shape.archetype, shape.verifier) not in out:
            out.append((shape.archetype, shape.verifier))
    return out


def _method(c: _Ctx) -> list[Workflow]:
    """Workflows built on the skill's checkable method: one per strong rule, procedure, table or template (two
    per family at most), each with the combinations the task shapes realise from it (rotated per workflow)."""
    out: list[Workflow] = []
    # A per-skill offset rotates the family order (ties in rank keep it) and each workflow's combinations, so a
    # corpus planned with one variant per skill spreads over the shapes instead of repeating the first that fits.
    spread = int(hashlib.sha256(c.skill.bundle_digest.encode()).hexdigest()[:8], 16)
    cands_all = compile_candidates(c.knowledge, c.skill.skill_file, read_docs(c.skill, specs=True))
    fams = list(families(cands_all).items())
    fams = fams[spread % len(fams):] + fams[:spread % len(fams)] if fams else fams
    for family, cands in fams:
        for k, cand in enumerate(cands[:2]):
            combos = _combos(cand)
            if not combos:
                continue
            shift = (len(out) + k + spread) % len(combos)
            combos = combos[shift:] + combos[:shift]
            p = cand.predicate
            verb, why = FAMILY_TASK[family]
            out.append(
                Workflow(
                    rank=1,
                    name=to_label(f"{family}-{p.params.get('token') or p.subject}"[:40]),
                    summary=f"{verb[0].upper()}{verb[1:]}: {p.statement[:180]}",
                    criteria=Criteria(
                        verifiable=5,
                        well_specified=5,
                        solvable_in_hours=4,
                        hard_for_good_reason=4 + (cand.score >= 2.0),
                        realistic=4,
                        outcome_graded=5,
                        rationale=why,
                    ),
                    meta_plan=MetaPlan(
                        scenario=f"A team applies the {c.facts.name} playbook's {p.subject!r} ({p.kind}) to real work.",
                        initial_world="Records, logs, cases or drafts built so that the rule's wording decides; the "
                        "rule is quoted from the skill into the task's docs.",
                        planted_defects=[
                            "items that break the rule",
                            "near misses and boundary values",
                            *([f"items under the rule's exception ({p.exception})"] if p.exception else []),
                        ],
                        difficulty_source=why,
                        solution_sketch="Read the quoted rule, apply it item by item, write the graded output.",
                        verifier_strategy="Precision-aware comparison with answers computed by our implementation of "
                        "the rule; hidden inputs for program deliverables.",
                        risks=["The rule may be stated loosely; the task states the semantics it grades."],
                    ),
                    assets=[
                        AssetRecommendation(
                            purpose="the rule's text",
                            kind="document",
                            sources=[c.cite(p.source.file)],
                            composition=f"Quote {p.source.label} into the task's docs.",
                            fallback="None: without the rule there is no task.",
                        )
                    ],
                    axis_pool=c.pool(*combos),
                    focus=WorkflowFocus(family=family, source=p.source.label),
                )
            )
    return out


BUILDERS: tuple[Callable[[_Ctx], list[Workflow]], ...] = (
    _method,
    _scripts,
    _data,
    _commands,
    _references,
    _templates,
    _sections,
    _review,
)


def plan_offline(
    skill: SkillRecord,
    *,
    prompt_version: str,
    catalogue: AxisCatalogue | None = None,
    facts: SkillFacts | None = None,
    knowledge: SkillKnowledge | None = None,
) -> WorkflowPlanSet:
    """Deterministic, skill-specific plans from the skill's own content, labelled `generator: offline`."""
    ctx = _Ctx(skill, facts or extract_facts(skill), catalogue or load_axes(), knowledge or extract_knowledge(skill))
    candidates = [w for build in BUILDERS for w in build(ctx)]
    ranked = sorted(enumerate(candidates), key=lambda iw: (-iw[1].criteria.total(), iw[0]))
    chosen: list[Workflow] = []
    names: set[str] = set()
    for _, w in ranked:
        name = w.name
        for i in range(2, 10):
            if name not in names:
                break
            name = to_label(f"{w.name[:44]}-{i}")
        names.add(name)
        chosen.append(w.model_copy(update={"rank": len(chosen) + 1, "name": name}))
        if len(chosen) == MAX_WORKFLOWS:
            break
    return WorkflowPlanSet(
        skill_id=skill.skill_id,
        bundle_digest=skill.bundle_digest,
        generator="offline",
        model=None,
        prompt_version=prompt_version,
        workflows=chosen,
    )
