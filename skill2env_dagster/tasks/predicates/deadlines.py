"""Deadline rules: "<do something> within N <unit>", each scoped to a category the skill names (a priority, a
severity, a regulation), with the skill's own extension clause ("extendable by 60 days for complex requests").

A group is the same action (respond, notify, close…) across sibling categories - the SLA of P1 to P4, the response
time of SEV2 and SEV3, GDPR and CCPA requests - so which limit applies depends on each record's category: the rule
with its condition. A group is compiled only when every part of it can be honoured exactly: at least two categories
with different limits, or one with its extension; units a calendar decides (minutes to months, business days
skipping weekends); no condition left unmodelled ("if high risk", "unless…"), no limit without a number
("Immediate", "Next business day"), no heading of a blank form ("**High Priority (Within 30 days):** 1. 2. 3."), and
only what SKILL.md itself states (a limit in a reference file's appendix is background, not the skill's method: a
blind review found such tasks about nothing the skill does). What is left out is recorded with why (`Refusal`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from skill2env_dagster.knowledge.source import Block, Doc, blocks, plain, sentences
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef

UNITS = {"min": "minutes", "mins": "minutes", "minute": "minutes", "minutes": "minutes", "hour": "hours",
         "hours": "hours", "hr": "hours", "hrs": "hours", "day": "days", "days": "days", "calendar day": "days",
         "calendar days": "days", "business day": "business_days", "business days": "business_days",
         "working day": "business_days", "working days": "business_days", "week": "weeks", "weeks": "weeks",
         "month": "months", "months": "months"}
_UNIT = r"(business days?|working days?|calendar days?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?)"
WITHIN = re.compile(r"\bwithin\s+(\d{1,3})\s*" + _UNIT + r"\b", re.I)
EXTENSION = re.compile(r"\(?\s*(?:extendable|extended|extensible)\s+by\s+(?:up to\s+)?(\d{1,3})\s*" + _UNIT
                       + r"\b([^)]*)\)?", re.I)
BLANKS = re.compile(r"(?:^|\s)1\.\s+2\.(?:\s+\d+\.)*\s*$")  # "…(Within 30 days): 1. 2. 3." - a form's blanks
# A list item that tells the reader what to do is advice, not what a record is about ("One sentence thanking them…").
INSTRUCTION = re.compile(r"(?:do|don't|do not|never|always|send|write|use|include|keep|avoid|make|ask|mention|thank|"
                         r"one sentence|be|add|check|follow|state|list|reply|respond)\b", re.I)
_CONDITION = re.compile(r"\b(if|unless|except|when|whenever|where|provided|depending|only for)\b", re.I)
# Ranked levels a skill assigns (a priority, a severity), by their short label or their words.
RANKED = re.compile(r"(?:p|sev|s|tier|level|l|priority|severity)\s*-?\d\b", re.I)
RANKED_WORD = re.compile(r"\b(?:critical|urgent|high|medium|moderate|low|major|minor|blocker)\b", re.I)
# The skill's method checks records against a single limit: it names the status or flag a late one gets.
CHECKED = re.compile(r"\b(?:flag(?:ged)?|status|overdue|late|later|past due|mark(?:ed)? as|breached)\b", re.I)
_DESCRIPTIVE = re.compile(r"\b(?:is|are)\s+(?:the\s+)?(?:standard|typical|common|normal|usual|customary|market)\b",
                          re.I)
# verb (as a rule says it) -> (lemma, past participle for the record field, noun for the event)
VERBS = {
    "respond": ("respond", "responded", "response"), "response": ("respond", "responded", "response"),
    "reply": ("respond", "responded", "response"), "answer": ("respond", "responded", "response"),
    "notify": ("notify", "notified", "notification"), "notification": ("notify", "notified", "notification"),
    "acknowledge": ("acknowledge", "acknowledged", "acknowledgement"),
    "close": ("close", "closed", "closure"), "closed": ("close", "closed", "closure"),
    "resolve": ("resolve", "resolved", "resolution"), "resolution": ("resolve", "resolved", "resolution"),
    "address": ("address", "addressed", "action"), "addressed": ("address", "addressed", "action"),
    "review": ("review", "reviewed", "review"), "reviews": ("review", "reviewed", "review"),
    "send": ("send", "sent", "message"), "follow-up": ("follow up", "followed_up", "follow-up"),
    "complete": ("complete", "completed", "completion"), "completed": ("complete", "completed", "completion"),
    "fix": ("fix", "fixed", "fix"), "remediate": ("remediate", "remediated", "remediation"),
    "escalate": ("escalate", "escalated", "escalation"), "report": ("report", "reported", "report"),
    "submit": ("submit", "submitted", "submission"), "approve": ("approve", "approved", "approval"),
    "contact": ("contact", "contacted", "contact"), "process": ("process", "processed", "processing"),
    "investigate": ("investigate", "investigated", "investigation"), "update": ("update", "updated", "update"),
    "post": ("post", "posted", "posting"), "posted": ("post", "posted", "posting"),
}
# Record kinds a rule's object (or the skill's name) may name; the first match decides what the records are.
RECORD_NOUNS = ("request", "ticket", "incident", "breach", "interview", "disclosure", "dispute", "page", "invoice",
                "finding", "complaint", "case", "issue", "claim", "alert", "defect", "deviation", "capa", "ncr",
                "order", "return", "refund", "application", "review", "update", "action", "change", "vulnerability",
                "report", "inquiry", "lead", "escalation", "task")
_STOP = {"of", "a", "an", "the", "to", "for", "and", "or", "all", "any", "each", "every", "their", "its", "our",
         "your", "becoming", "being", "receiving", "getting"}


@dataclass(frozen=True)
class Deadline:
    """One category's limit, with the sentence and line that state it."""

    category: str  # the short label records carry: "P1", "GDPR", "SEV2"
    label: str  # the heading or cell as the skill writes it: "P1 — Critical"
    amount: int
    unit: str  # minutes | hours | days | business_days | weeks | months
    sentence: str
    ref: SourceRef
    ext_amount: int = 0
    ext_unit: str = ""
    ext_condition: str = ""  # the skill's words: "for complex requests", "with notice"
    examples: tuple[str, ...] = ()  # the skill's list items under the category (what such records are about)
    lines: tuple[int, ...] = ()  # every line of the paragraph or row the limit is written in
    column: str = ""  # a limit from a table: its column's heading (the sentence is then the cell, verbatim)
    checked: bool = False  # the skill names what a late record gets ("a later posting gets the flag `LATE`")


@dataclass
class Group:
    action: str  # lemma: respond, notify, close…
    done: str  # past participle for the record field: responded
    event: str  # what the record's end timestamp is: first response, notification…
    noun: str  # what the records are: ticket, request…
    start: str  # the start field: opened_at, received_at, aware_at
    file: str
    deadlines: list[Deadline] = field(default_factory=list)
    start_phrase: str = ""  # the event the rule counts from, in its words ("becoming aware of a … breach")


@dataclass(frozen=True)
class Refusal:
    """A deadline the skill states that no task is built on, and why."""

    ref: SourceRef
    why: str


def _category(label: str) -> str:
    """A heading or cell as the short value a record carries: 'P1 — Critical' -> 'P1', 'GDPR (General…)' -> 'GDPR'."""
    text = re.split(r"\s+[—–-]\s+|\s*\(|:\s", plain(label), maxsplit=1)[0]
    return text.strip(" *_`.:") or plain(label).strip()


def _plural(noun: str) -> str:
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def plural(noun: str) -> str:
    return _plural(noun)


def _noun_in(text: str) -> str | None:
    words = re.findall(r"[a-z]+", text.lower())
    for w in words:
        for n in RECORD_NOUNS:
            if w in (n, _plural(n)):
                return n
    return None


def _verb(lead: str) -> tuple[str, str, str] | None:
    """The action a rule's words before 'within' name: the known verb or event noun nearest to 'within'."""
    for w in reversed(re.findall(r"[a-z][a-z-]*", lead.lower())):
        if w in VERBS:
            return VERBS[w]
    return None


def _start(rest: str, lead: str = "") -> tuple[str, str] | None:
    """The start event a rule counts from, as (field, the rule's words): 'of becoming aware of a breach' ->
    ('aware_at', 'becoming aware of a breach'); a lead 'After an interview, send…' -> ('interview_at', 'an
    interview'); None when the rule names none."""
    m = re.match(r"\s*(?:of|after|from|following)\s+(.+)", rest, re.I) or re.match(
        r"\s*(?:after|following)\s+([^,]+),", lead, re.I)
    if not m:
        return None
    phrase = re.split(r"[;.(]", m.group(1), maxsplit=1)[0].strip()
    chunk = re.split(r"\s+of\s+|,", phrase, maxsplit=1)[0]
    words = [w for w in re.findall(r"[a-z]+", chunk.lower()) if w not in _STOP]
    if len(words) >= 2 and words[-1] == "date":  # "the invoice date" is a field of its own: invoice_date
        return f"{words[-2]}_date", phrase
    return (f"{words[-1]}_at", phrase) if words else None


def _unit(text: str) -> str:
    return UNITS[" ".join(text.lower().split())]


def _lead_label(text: str) -> tuple[str, str]:
    """A leading bold label and what follows: '**SLA expectation:** Respond…' -> ('SLA expectation', 'Respond…')."""
    m = re.match(r"\s*(?:\*\*|__)(.+?)(?:\*\*|__)\s*:?\s*(.*)", text, re.S)
    if m:
        return m.group(1).strip(" :"), m.group(2)
    m = re.match(r"\s*([A-Z][\w /&-]{1,40}):\s+(.*)", text, re.S)
    return (m.group(1), m.group(2)) if m else ("", text)


@dataclass
class _Found:
    action: tuple[str, str, str] | None
    noun: str | None
    start: tuple[str, str] | None
    deadline: Deadline
    inside_label: bool = False


def _from_sentence(block: Block, sentence: str, refusals: list[Refusal]) -> list[_Found]:
    out: list[_Found] = []
    if BLANKS.search(plain(sentence)) and WITHIN.search(sentence):
        m = WITHIN.search(sentence)
        assert m is not None
        refusals.append(Refusal(block.doc.ref(block.line_of(sentence), m.group(0)),
                                "a heading of a blank template to fill in (empty numbered items), not a rule anyone "
                                "keeps"))
        return out
    label, body = _lead_label(sentence)
    if WITHIN.search(label) and not WITHIN.search(body):  # "**High Priority (Within 30 days):**" and its items
        label, body = "", sentence.replace("**", "").replace("__", "")
    for clause in re.split(r";\s+", body):
        m = WITHIN.search(clause)
        if not m:
            continue
        ref = block.doc.ref(block.line_of(clause), m.group(0))
        ext = EXTENSION.search(clause)
        rest = clause[m.end():]
        rest_wo_ext = EXTENSION.sub("", rest)
        lead = clause[:m.start()]
        inside_label = bool(re.search(r"\(\s*$", lead))  # "**High Priority (Within 30 days):**"
        if _CONDITION.search(lead if inside_label else lead + " " + rest_wo_ext) or (
                ext and _CONDITION.search(ext.group(3))):
            refusals.append(Refusal(ref, "the limit has a condition no record field can carry"))
            continue
        if _DESCRIPTIVE.search(rest_wo_ext) or _DESCRIPTIVE.search(lead):
            refusals.append(Refusal(ref, "it describes a standard term, not a deadline anyone keeps"))
            continue
        if inside_label:
            category_label, verb = lead.rstrip(" (*"), None
        else:
            category_label, verb = block.section, _verb(lead) or _verb(label)
            if "follow-up" in lead.lower() or "follow up" in lead.lower():
                verb = ("follow up", "followed_up", "follow-up")
        if not category_label or len(_category(category_label).split()) > 5:
            refusals.append(Refusal(ref, "no category label the limit belongs to"))
            continue
        quoted = f"{label}: {clause}" if label and not inside_label else clause if label else sentence
        d = Deadline(_category(category_label), plain(category_label), int(m.group(1)), _unit(m.group(2)),
                     _clean(quoted), ref,
                     int(ext.group(1)) if ext else 0, _unit(ext.group(2)) if ext else "",
                     " ".join(ext.group(3).split()).strip(" .") if ext else "",
                     lines=tuple(range(block.line, block.end + 1)), checked=bool(CHECKED.search(plain(block.text))))
        out.append(_Found(verb, _noun_in(lead) or _noun_in(rest_wo_ext), _start(rest_wo_ext, lead), d,
                          inside_label))
    return out


def _clean(sentence: str) -> str:
    """A rule sentence as quoted: plain text, without an empty numbered list run into it ('… days): 1. 2. 3.')."""
    text = " ".join(plain(sentence).split())
    return re.sub(r"(?:\s*\d+\.)+\s*$", "", text).strip()


def _examples(items: list[Block]) -> tuple[str, ...]:
    out = []
    for b in items:
        text = " ".join(plain(b.text).split()).strip(" .")
        if 12 <= len(text) <= 90 and not WITHIN.search(text) and not text.endswith(":") and not INSTRUCTION.match(text):
            out.append(text[:1].upper() + text[1:])
    return tuple(out[:8])


def _items_for(bs: list[Block], i: int, inside_label: bool) -> tuple[str, ...]:
    """The list items that belong to the category a deadline at block i names: the items right after its label
    paragraph, or the top-level items of its section."""
    if inside_label:
        run = []
        for b in bs[i + 1:]:
            if b.kind != "item":
                break
            run.append(b)
        return _examples(run)
    return _examples([b for b in bs if b.kind == "item" and b.section == bs[i].section and b.depth == 0])


def _from_table(block: Block, refusals: list[Refusal]) -> list[_Found]:
    head, *rows = block.rows
    out = []
    for col, name in enumerate(head):
        cells = [r[col] if col < len(r) else "" for r in rows]
        if sum(bool(WITHIN.search(c)) for c in cells) < 2:
            continue  # a column of limits has at least two
        verb = _verb(name)
        for r, cell, line in zip(rows, cells, block.row_lines[1:], strict=False):
            m = WITHIN.search(cell)
            ref = block.doc.ref(line, cell.strip() or None or "")
            if not m:
                refusals.append(Refusal(ref, f"'{cell.strip()}' is no number of units"))
                continue
            if _CONDITION.search(cell):
                refusals.append(Refusal(ref, "the limit has a condition no record field can carry"))
                continue
            criteria = tuple(" ".join(plain(c).split()) for j, c in enumerate(r) if j not in (0, col) and c.strip())
            d = Deadline(_category(r[0]), plain(r[0]), int(m.group(1)), _unit(m.group(2)),
                         " ".join(plain(cell).split()), ref, examples=criteria, lines=(line,),
                         column=" ".join(plain(name).split()))
            out.append(_Found(verb, None, None, d))
    return out


def _skill_noun(name: str, section: str) -> str:
    return _noun_in(section) or _noun_in(name) or "item"


def compile_deadlines(docs: list[Doc], skill_name: str) -> tuple[list[Group], list[Refusal]]:
    """Every deadline group the skill's documents support, and the deadlines left out with why."""
    refusals: list[Refusal] = []
    groups: dict[tuple[str, str], Group] = {}
    for doc in docs:
        found: list[tuple[Block, _Found]] = []
        bs = blocks(doc)
        for i, b in enumerate(bs):
            if b.kind == "table" and len(b.rows) >= 3:
                found += [(b, f) for f in _from_table(b, refusals)]
            elif b.kind in ("paragraph", "item"):
                for f in (f for s in sentences(b.text) for f in _from_sentence(b, s, refusals)):
                    items = _items_for(bs, i, f.inside_label) if b.kind == "paragraph" else ()
                    found.append((b, replace(f, deadline=replace(f.deadline, examples=items))))
        for b, f in found:
            action = f.action or ("complete", "completed", "completion")
            noun = f.noun or _skill_noun(skill_name, b.section)
            g = groups.setdefault((doc.path, action[0]), Group(action[0], action[1], action[2], noun, "", doc.path))
            if f.start and not g.start:
                g.start, g.start_phrase = f.start
            if any(d.category.lower() == f.deadline.category.lower() for d in g.deadlines):
                refusals.append(Refusal(f.deadline.ref, f"a second limit for {f.deadline.category} in one group"))
                continue
            g.deadlines.append(f.deadline)
    out = []
    for g in groups.values():
        opened = g.noun in ("ticket", "incident", "issue", "case", "complaint", "alert")
        g.start = g.start or ("received_at" if g.noun in ("request", "application", "inquiry") else "opened_at"
                              if opened else "raised_at")
        if not _is_skill_file(g.file):
            refusals += [Refusal(d.ref, "stated only in a reference file, not in SKILL.md: background the skill's "
                                        "method does not keep") for d in g.deadlines]
            continue
        limits = {(d.amount, d.unit) for d in g.deadlines}
        if len(g.deadlines) >= 2 and len(limits) >= 2:
            if why := _assigned_by_judgement(g):
                refusals.append(Refusal(g.deadlines[0].ref, why))
            else:
                out.append(g)
        elif len(g.deadlines) == 1 and (g.deadlines[0].ext_amount or g.start_phrase):
            if g.deadlines[0].checked:
                out.append(g)
            else:
                refusals.append(Refusal(g.deadlines[0].ref, "one limit on one line of SKILL.md, which the skill's "
                                        "method never checks records against (it names no status or flag for a "
                                        f"late {g.noun}): a task on it is a timestamp audit, not about the skill"))
        else:
            refusals += [Refusal(d.ref, "a single limit with no condition or start event: the answer is one "
                                        "subtraction") for d in g.deadlines]
    return out, refusals


def _assigned_by_judgement(g: Group) -> str:
    """Why a group's categories cannot be handed to the agent: they are ranked levels (P1-P4, SEV1-4, critical to
    low) the skill assigns by its own criteria (list items under each level, a criteria column beside the limits).
    Giving each record its level makes the task date arithmetic, with the skill's decision given away (blind review
    2 called both such tasks not about their skill); records whose text decides the level by those criteria need a
    model. Empty when the categories are facts of the record (a regulation, a pager's severity with no criteria)."""
    ranked = all(RANKED.match(d.category) or RANKED_WORD.search(d.label) for d in g.deadlines)
    criteria = [x for d in g.deadlines for x in d.examples]
    if not ranked or not criteria:
        return ""
    cats = ", ".join(d.category for d in g.deadlines)
    return (f"{cats} are levels the skill assigns by its own criteria (“{criteria[0]}”): a task that hands each "
            f"{g.noun} its level is date arithmetic with the skill's decision given away, and {plural(g.noun)} "
            "whose text decides the level by those criteria need a model")


def _is_skill_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1].lower() == "skill.md"


def predicate(g: Group) -> Predicate:
    """The group as a blueprint predicate (kind `deadline`): the first deadline's line is its source."""
    first = g.deadlines[0]
    params = {"action": g.action, "done": g.done, "event": g.event, "noun": g.noun, "start": g.start,
              "start_phrase": g.start_phrase,
              "deadlines": [{"category": d.category, "label": d.label, "amount": d.amount, "unit": d.unit,
                             "sentence": d.sentence, "line": d.ref.line, "ext_amount": d.ext_amount,
                             "ext_unit": d.ext_unit, "ext_condition": d.ext_condition, "examples": list(d.examples),
                             "column": d.column}
                            for d in g.deadlines]}
    params["sources"] = [f"{g.file}:{n}" for d in g.deadlines for n in (d.lines or (d.ref.line,))]
    statement = "; ".join(f"{d.label}: {d.sentence}" for d in g.deadlines)
    return Predicate(id="R0", kind="deadline", subject=f"{g.noun} {g.event}"[:80], statement=statement[:400],
                     params=params, source=first.ref)
