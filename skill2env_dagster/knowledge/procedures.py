"""Ordered procedures (numbered lists of imperative steps, runs of numbered step headings), checklists and output
templates (a fenced Markdown block, or a section, that lays out the headings a deliverable must have)."""

from __future__ import annotations

import re
from itertools import groupby

from skill2env_dagster.knowledge.source import Block, plain
from skill2env_dagster.models.knowledge import Checklist, Procedure, ProcedureStep, Rule, Template

MIN_STEPS = 3
MAX_STEPS = 12
_OPTIONAL = re.compile(r"\b(optional(?:ly)?|if (?:needed|necessary|applicable|required|any|present|available|relevant)|"
                       r"when (?:needed|necessary|applicable|relevant)|where applicable|if so)\b", re.I)
_STEP_HEADING = re.compile(r"^(?:step|phase|stage)?\s*(\d{1,2})\s*[.:)\-–]\s*(.+)$|"
                           r"^(?:step|phase|stage)\s+(\d{1,2})\b\s*[:.\-–]?\s*(.*)$", re.I)
_PROCEDURE_SECTION = re.compile(r"\b(workflow|procedure|process|steps?|how to|instructions?|approach|method|"
                                r"phases?|pipeline|playbook|runbook|sequence|algorithm|checklist|quick ?start|usage)\b",
                                re.I)
# Common imperative verbs a procedure step starts with (a list of nouns such as "1. Title 2. Abstract" is not one).
VERBS = frozenset("""
accept add adjust align analyse analyze apply ask assess assign attach audit back build bump calculate call capture
change check choose clarify classify clean clone close collect combine commit compare compile compute confirm connect
consider convert copy count create decide define delete deploy derive describe design detect determine develop diff
document download draft drop edit enable ensure escalate establish estimate evaluate examine execute explain export
extract fetch file fill filter find finalize finalise fix flag follow format gather generate get group handle identify
implement import include initialize initialise insert inspect install interview investigate iterate keep label launch
link list load locate log look make map mark measure merge migrate monitor move name normalise normalize note notify
obtain open order organize organise outline package parse perform pick place plan populate prepare present preview
print prioritize prioritise produce profile prompt propose provide publish pull push query rank read rebuild record
reduce refactor refine register reject release remove rename render reorder repeat replace reply report reproduce
request require rerun research reset resolve respond restart restore return review revise roll route run sample save
scan schedule score search select send separate set setup share ship simplify sort specify split stage start state
stop store structure submit summarize summarise switch sync tag test track train transform translate triage trim
update upgrade upload use validate verify visualize visualise wait walk watch write
""".split())  # noqa: SIM905 - a word list reads better as text


def _first_word(text: str) -> str:
    m = re.match(r"[^A-Za-z]*([A-Za-z]+)", plain(text))
    return m.group(1).lower() if m else ""


def starts_with_action(text: str) -> bool:
    """The step names something to do: an imperative verb or its -ing form ('Validate', 'Validating the input')."""
    w = _first_word(text)
    return w in VERBS or (w.endswith("ing") and (w[:-3] in VERBS or w[:-3] + "e" in VERBS or w[:-4] in VERBS))


def performed(p: Procedure) -> bool:
    """Steps someone performs, not numbered topics ('1. Reentrancy 2. Access Control', a table of contents): most
    steps start with an action, or the section calls itself a procedure and at least one step does."""
    acts = sum(starts_with_action(s.text) for s in p.steps)
    return 2 * acts >= len(p.steps) or (acts >= 1 and bool(_PROCEDURE_SECTION.search(p.title)))


def _looks_imperative(texts: list[str]) -> bool:
    hits = sum(_first_word(t) in VERBS for t in texts)
    return hits >= max(2, (len(texts) + 1) // 2)


def _step_text(text: str) -> str:
    t = plain(text.split("\n")[0])
    return t[:240]


def procedures_in(blocks: list[Block]) -> list[Procedure]:
    """Numbered lists whose items are imperative steps, and runs of numbered step headings."""
    out: list[Procedure] = []
    items = [b for b in blocks if b.kind == "item" and b.ordered and b.depth == 0]
    for _lid, group in groupby(items, key=lambda b: (b.doc.path, b.list_id)):
        steps = list(group)
        texts = [s.text for s in steps]
        if not MIN_STEPS <= len(steps) <= MAX_STEPS:
            continue
        if not (_looks_imperative(texts) or (_PROCEDURE_SECTION.search(steps[0].section)
                                             and sum(_first_word(t) in VERBS for t in texts) >= 1)):
            continue
        out.append(Procedure(
            title=steps[0].section or "Procedure", kind="numbered_list", ref=steps[0].ref(),
            steps=[ProcedureStep(n=i + 1, text=_step_text(s.text), optional=bool(_OPTIONAL.search(plain(s.text))),
                                 ref=s.ref()) for i, s in enumerate(steps)]))
    out += _heading_procedures(blocks)
    return out


def _heading_procedures(blocks: list[Block]) -> list[Procedure]:
    """'### 1. Parse the issue', '### Step 2: Route' … under one parent heading."""
    out: list[Procedure] = []
    run: list[tuple[Block, str]] = []
    parent = ""

    def flush() -> None:
        if MIN_STEPS <= len(run) <= MAX_STEPS:
            first = run[0][0]
            out.append(Procedure(
                title=parent or first.section or "Procedure", kind="step_headings", ref=first.ref(),
                steps=[ProcedureStep(n=i + 1, text=t[:240], optional=bool(_OPTIONAL.search(t)), ref=b.ref())
                       for i, (b, t) in enumerate(run)]))
        run.clear()

    level = 0
    for b in (x for x in blocks if x.kind == "heading"):
        if run and b.level > level:
            continue  # a sub-heading inside a step
        m = _STEP_HEADING.match(plain(b.text))
        text = (m.group(2) or m.group(4) or "").strip() if m else ""
        if not (text and run and b.level == level):
            flush()
            if not text:
                continue
            level, parent = b.level, b.section
        run.append((b, text))
    flush()
    return out


def checklists_in(blocks: list[Block]) -> list[Checklist]:
    """'- [ ] item' lists, grouped per list."""
    out = []
    items = [b for b in blocks if b.kind == "item" and re.match(r"\s*\[[ xX]\]", b.text)]
    for _lid, group in groupby(items, key=lambda b: (b.doc.path, b.list_id)):
        g = list(group)
        if len(g) < 2:
            continue
        rules = [Rule(text=plain(re.sub(r"^\s*\[[ xX]\]\s*", "", b.text.split("\n")[0]))[:240], modality="must",
                      section=b.section, origin="checklist", ref=b.ref()) for b in g]
        out.append(Checklist(title=g[0].section or "Checklist", items=rules, ref=g[0].ref()))
    return out


_MD_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*$", re.M)
_FIELD = re.compile(r"^\s*(?:[-*]\s+)?\*\*([^*\n:]{2,40}):?\*\*:?", re.M)


def templates_in(blocks: list[Block]) -> list[Template]:
    """Markdown (or unlabelled) fences that lay out at least two headings: the skeleton of a deliverable."""
    out = []
    for b in blocks:
        if b.kind != "fence" or b.lang not in ("", "markdown", "md", "text", "txt"):
            continue
        heads = [plain(h) for _, h in _MD_HEADING.findall(b.text)]
        heads = [h for h in heads if 2 <= len(h) <= 80]
        if len(heads) >= 2:
            fields = [f.strip() for f in _FIELD.findall(b.text)][:12]
            first_line = b.line + 1 + next((i for i, ln in enumerate(b.text.splitlines()) if ln.startswith("#")), 0)
            out.append(Template(title=b.section or heads[0], headings=heads[:14], fields=fields,
                                ref=b.doc.ref(min(first_line, b.end))))
    return out
