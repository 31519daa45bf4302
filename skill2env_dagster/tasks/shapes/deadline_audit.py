"""audit_report / exact_state: which records of an export broke the skill's deadline rules.

The skill states a limit per category ("P1 — Critical: Respond within 1 hour", "GDPR: … within 30 days (extendable
by 60 days for complex requests)"); the export holds the records the skill's users handle (support tickets, data
subject requests, incidents, action items) with their category, start and end times. A record is late when its
end - or, while it is open, the export time - is after its deadline: its own category's limit, in the rule's own
unit, extended only where the skill's extension condition is met. The answer lists the late records with their
deadline in UTC, which only that reading of the rule gives.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.compose.grammar import with_article
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.request import Request, render
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec
from skill2env_dagster.tasks.predicates.deadlines import plural
from skill2env_dagster.tasks.shapes.base import Design, ShapeError, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, lowest_over
from skill2env_dagster.tasks.worlds.deadlines import DeadlineWorld, Limit, build, export_doc, utc

UNIT_WORDS = {"minutes": "minute", "hours": "hour", "days": "calendar day", "business_days": "business day",
              "weeks": "week", "months": "calendar month"}

LOADER = '''
def load():
    rows = read_table(OUT, ["id", "due_by"])
    return None if rows is None else {"rows": [r + ("",) * (2 - len(r)) for r in rows]}
'''

SOLVER = r'''
import calendar, csv, json, pathlib
from datetime import datetime, timedelta, timezone

SPEC = json.loads(__SPEC__)
FIXED = {"minutes": 1, "hours": 60, "days": 1440, "weeks": 10080}


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def plus(t, amount, unit):
    if unit in FIXED:
        return t + timedelta(minutes=amount * FIXED[unit])
    if unit == "business_days":
        while amount:
            t += timedelta(days=1)
            if t.weekday() < 5:
                amount -= 1
        return t
    m = t.month - 1 + amount
    y, m = t.year + m // 12, m % 12 + 1
    return t.replace(year=y, month=m, day=min(t.day, calendar.monthrange(y, m)[1]))


data = json.loads(pathlib.Path(SPEC["export"]).read_text())
if SPEC["category_file"]:
    with open(SPEC["category_file"]) as fh:
        category = {row["id"]: row[SPEC["category"]] for row in csv.DictReader(fh)}
    for rec in data[SPEC["records"]]:
        rec[SPEC["category"]] = category[rec["id"]]
extended = set()
if SPEC["extensions_file"]:
    with open(SPEC["extensions_file"]) as fh:
        extended = {row["id"] for row in csv.DictReader(fh)}
exported = when(data["exported_at"])
late = []
for rec in data[SPEC["records"]]:
    if not rec.get(SPEC["start"]):
        continue  # the start event never happened: the rule does not cover this record
    lim = SPEC["limits"][rec[SPEC["category"]] if SPEC["category"] else SPEC["only"]]
    due = plus(when(rec[SPEC["start"]]), lim["amount"], lim["unit"])
    if lim["ext_amount"] and (rec.get("extension") == "yes" or rec["id"] in extended):
        due = plus(due, lim["ext_amount"], lim["ext_unit"])
    end = when(rec[SPEC["end"]]) if rec.get(SPEC["end"]) else exported
    if end > due:
        late.append((rec["id"], due.strftime("%Y-%m-%dT%H:%M:%SZ")))
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("id,due_by\n" + "".join(f"{i},{d}\n" for i, d in late))
'''

# The naive reading: one strict clock for every category (the strictest limit), calendar days for business days,
# local clock readings with their offsets dropped, no extensions, open records never late.
NAIVE = r'''
import json, pathlib
from datetime import datetime, timedelta

SPEC = json.loads(__SPEC__)
data = json.loads(pathlib.Path(SPEC["export"]).read_text())
minutes = {"minutes": 1, "hours": 60, "days": 1440, "business_days": 1440, "weeks": 10080, "months": 43200}


def local(text):
    return datetime.fromisoformat(text[:19])


late = []
for rec in data[SPEC["records"]]:
    lim = SPEC["limits"][rec[SPEC["category"]] if SPEC["category"] else SPEC["only"]]
    if not rec.get(SPEC["end"]) or not rec.get(SPEC["start"]):
        continue
    start = local(rec.get(SPEC["earlier"]) or rec[SPEC["start"]])
    due = start + timedelta(minutes=lim["amount"] * minutes[lim["unit"]])
    if local(rec[SPEC["end"]]) > due:
        late.append((rec["id"], due.strftime("%Y-%m-%dT%H:%M:%SZ")))
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("id,due_by\n" + "".join(f"{i},{d}\n" for i, d in late))
'''


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "rules"


def _field_name(deadlines: list[dict[str, Any]]) -> str:
    cats = [d["category"] for d in deadlines]
    if all(re.fullmatch(r"P\d", c) or "priority" in c.lower() for c in cats):
        return "priority"
    if all(re.fullmatch(r"SEV\s?\d", c, re.I) or "severity" in c.lower() for c in cats):
        return "severity"
    return "category"


def _limit_text(d: dict[str, Any]) -> str:
    unit = UNIT_WORDS[d["unit"]] + ("s" if d["amount"] != 1 else "")
    return f"{d['amount']} {unit}"


def _rule_sentences(p: Predicate, cat_field: str, noun: str, approved: str) -> str:
    """Each category's rule, quoted, and when its extension applies."""
    single = len(p.params["deadlines"]) == 1
    parts = ["The playbook's limit:" if single else f"The playbook gives each {cat_field} its own limit."]
    for d in p.params["deadlines"]:
        said = d["sentence"].rstrip(".:")
        if d.get("column"):  # a table cell, quoted as it stands, with the column it sits in
            parts.append(f"{d['category']}: “{said}” (its “{d['column']}” cell).")
        else:
            parts.append(f"“{said}.”" if single else f"{d['category']}: “{said}.”")
        if d["ext_amount"]:
            ext = _limit_text({"amount": d["ext_amount"], "unit": d["ext_unit"]})
            parts.append(f"The extension of {ext} applies only to a {d['category']} {noun} {approved}, which "
                         f"records that the playbook's condition “{d['ext_condition']}” is met.")
    return " ".join(parts)


class DeadlineAudit:
    name = "deadline_audit"
    archetype = "audit_report"
    verifier = "exact_state"
    family = "deadlines"
    kinds = frozenset({"deadline"})
    max_preds = 1
    effects = frozenset({"boundary", "precondition", "split_sources", "rule_in_docs"})

    def design(self, inp: ShapeInput) -> Design:
        p = inp.preds[0]
        k = p.params
        noun, nouns = k["noun"], plural(k["noun"])
        cat_field = _field_name(k["deadlines"])
        start_field, end_field = k["start"], f"{k['done']}_at"
        limits = {d["category"]: Limit(d["category"], d["amount"], d["unit"], d["ext_amount"], d["ext_unit"])
                  for d in k["deadlines"]}
        n = 14 + 4 * inp.level
        prefix = {"ticket": "T", "request": "DSR", "incident": "INC"}.get(noun, noun[:3].upper())
        phrase = k.get("start_phrase", "")
        optional = bool(phrase) and not phrase.lower().startswith(("becoming", "being"))
        earlier_field = ("occurred_at" if "aware" in phrase.lower() else "logged_at") if phrase else ""
        world = build(limits, n, inp.rng("deadlines"), prefix, noun,
                      {d["category"]: d.get("examples", []) for d in k["deadlines"]}, bool(phrase), optional)
        split = inp.has("split_sources") and world.has_extensions()
        # Without extensions, split sources put each record's category in a file of its own (a triage log).
        cat_split = inp.has("split_sources") and not world.has_extensions() and len(limits) > 1
        cat_file = f"/app/export/{cat_field}_assignments.csv" if cat_split else ""
        export = f"/app/export/{nouns}.json"
        ext_file = "/app/export/extension_approvals.csv" if split else ""
        doc = f"/app/docs/{_slug(inp.text.name)}-{_slug(k['event'])}-limits.md"
        out = f"/app/out/late_{nouns}.csv"
        data = export_doc(world, nouns, cat_field, start_field, end_field, split, earlier_field)
        if cat_split:
            for row in data[nouns]:
                row.pop(cat_field)
        files: dict[str, str | bytes] = {export.lstrip("/"): json.dumps(data, indent=2) + "\n",
                                         doc.lstrip("/"): self._excerpt(inp.text, p)}
        if cat_split:
            files[cat_file.lstrip("/")] = f"id,{cat_field}\n" + "".join(
                f"{r.id},{r.category}\n" for r in sorted(world.records, key=lambda r: r.id))
        if split:
            files[ext_file.lstrip("/")] = "id,approved_by\n" + "".join(
                f"{r.id},{inp.rng('approver').choice(['legal', 'dpo', 'ops lead'])}\n"
                for r in world.records if r.extended)
        spec = {"export": export, "records": nouns, "category": cat_field if len(limits) > 1 else "",
                "category_file": cat_file,
                "start": start_field, "end": end_field, "earlier": earlier_field, "only": next(iter(limits)),
                "extensions_file": ext_file, "out": out,
                "limits": {c: {"amount": x.amount, "unit": x.unit, "ext_amount": x.ext_amount,
                               "ext_unit": x.ext_unit} for c, x in limits.items()}}
        expected = {"late": sorted(world.expected()), "due": world.expected(), "conditions": world.conditions()}
        late_metric = "every_condition"
        metrics = [
            lowest_over("conditions", '[[i] for i in EXPECTED["late"]]', '[[r[0]] for r in out["rows"]]', 1,
                        "every_condition", f"The lowest, over the rule's conditions (the boundary, open {nouns}, "
                        f"each {cat_field}'s own limit, the unit, the UTC offsets, extensions, the start event) and "
                        f"the other {nouns}, of the Jaccard of the {nouns} planted to test that condition that are "
                        "reported with the late ones among them (1 when none of them is late and none is reported): "
                        "a reading that drops one condition scores 0 here.", [p.id]),
            lowest_over("conditions", '[[i, d] for i, d in EXPECTED["due"].items()]', '[r[:2] for r in out["rows"]]',
                        1, "due_times", f"The same lowest over the conditions, of late {nouns} reported with "
                        "exactly their deadline in UTC: a deadline counted without one condition is wrong where "
                        "that condition decides.", [p.id]),
        ]
        check = CheckScript(LOADER, metrics, {"SEP": '","', "OUT": repr(out)}, ("read_table",))
        text, stated = self._instruction(inp, p, world, export, ext_file, doc, out, cat_field, start_field, end_field,
                                         earlier_field, cat_file)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"List the {nouns} of an export of {n} whose {k['event']} missed the playbook's per-"
                      f"{cat_field} limit, each with its deadline in UTC.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=Slots(topic="", situation="", ask="", inputs="", guidance="", semantics=[], deliverable="",
                        outputs=[out, "/app/out"], text=text),
            stated=stated,
            check=check, expected=expected, rubric=self._rubric(inp, p, cat_field, out, tuple(world.conditions())),
            solve=solver_script(SOLVER.replace("__SPEC__", repr(json.dumps(spec)))),
            wrong=solver_script(NAIVE.replace("__SPEC__", repr(json.dumps(spec)))),
            cheats=self._cheats(world, out, export),
            complexity=Complexity(level=inp.sample.complexity, files_to_read=2 + (split or cat_split),
                                  rules_in_play=len(limits),
                                  dependent_steps=2, items=n),
            challenges=self._challenges(inp, world, split or cat_split, late_metric, cat_split),
            facts=[f"{export}: {n} {nouns} ({cat_field}, {start_field}, {end_field}) and exported_at",
                   f"{doc}: the playbook's limits, quoted"] + ([f"{ext_file}: approved extensions"] if split else [])
            + ([f"{cat_file}: each record's {cat_field}"] if cat_split else []),
            boundary=InformationBoundary(
                stated=["each category's limit and unit, quoted", "the boundary, offset, unit and open-record "
                        "conventions", "the output layout"],
                discover=[f"which {nouns} are open, which are near their limit",
                          "which timestamps carry other offsets than their start"]),
            docs=[doc], deliverables=[out],
        )

    def _excerpt(self, text: SkillText, p: Predicate) -> str:
        """The skill's lines the limits come from, verbatim, under their headings."""
        out = [f"# {text.name}: {p.params['event']} limits", "",
               "Quoted from our playbook (the lines each limit comes from, with their headings).", ""]
        shown: set[int] = set()
        for d in p.params["deadlines"]:
            line = d["line"]
            heading = text.heading_above(p.source.file, line)
            if heading and f"## {heading}" not in out:
                out += [f"## {heading}", ""]
            block = self._table(text, p.source.file, line) or text.block(p.source.file, line)
            if line not in shown and block[0] not in out:
                out += [*block, ""]
                shown.add(line)
        return "\n".join(out).rstrip() + "\n"

    @staticmethod
    def _table(text: SkillText, file: str, line: int) -> list[str]:
        """The whole Markdown table a limit's row sits in (its header included), or [] when the line is no row."""
        lines = text.lines(file)
        if not 1 <= line <= len(lines) or not lines[line - 1].lstrip().startswith("|"):
            return []
        first = last = line - 1
        while first > 0 and lines[first - 1].lstrip().startswith("|"):
            first -= 1
        while last + 1 < len(lines) and lines[last + 1].lstrip().startswith("|"):
            last += 1
        return lines[first:last + 1]

    def _instruction(self, inp: ShapeInput, p: Predicate, world: DeadlineWorld, export: str, ext_file: str,
                     doc: str, out: str, cat_field: str, start_field: str, end_field: str, earlier_field: str,
                     cat_file: str = "") -> tuple[str, list[str]]:
        """The instruction, and the sentences in it that state what the verifier grades."""
        k = p.params
        noun = k["noun"]
        units = {x.unit for x in world.limits.values()} | {x.ext_unit for x in world.limits.values() if x.ext_unit}
        conv = [f"{with_article(noun).capitalize()}'s limit runs from `{start_field}` to `{end_field}`; one with no "
                f"`{end_field}` is late only when its deadline passed before `exported_at`. Ending exactly at the "
                "deadline is on time.",
                "Timestamps carry their own UTC offsets, so compare instants, not clock readings, and do all "
                "arithmetic in UTC."]
        if earlier_field:
            conv.append(f"The clock starts at `{start_field}` (“{k['start_phrase']}”), not at `{earlier_field}`"
                        + (f"; {with_article(noun)} with no `{start_field}` is not covered by the rule." if any(
                            r.start is None for r in world.records) else "."))
        if "business_days" in units:
            conv.append("A business day limit keeps the clock time and skips Saturdays and Sundays.")
        if "months" in units:
            conv.append("A calendar month limit lands on the same day of the month, or on the last day of a "
                        "shorter month.")
        if world.has_extensions():
            where = (f"{ext_file} lists the approved extensions" if ext_file else
                     f"the `extension` field of each {noun} says `yes` or `no`")
            conv.append(f"An extension adds to the {noun}'s normal deadline" + ("." if ext_file else f"; {where}."))
        sources = (f"The export is {export}" + (f", approved extensions are in {ext_file}" if ext_file else "")
                   + (f", each {noun}'s `{cat_field}` is in {cat_file}" if cat_file else ""))
        request = Request(
            situation=(f"We review the {k['event']} limits our {inp.text.name} playbook sets for each {cat_field}. "
                       if len(world.limits) > 1 else
                       f"We review the {k['event']} limit of our {inp.text.name} playbook. ")
                      + f"{sources}, and the playbook's lines on "
                      + ("these limits" if len(world.limits) > 1 else "this limit") + f" are quoted in {doc}.",
            rules=_rule_sentences(p, cat_field, noun, f"listed in {ext_file}" if ext_file
                                  else "whose `extension` is `yes`"),
            conventions=" ".join(conv),
            deliverable=f"Write {out} with the header `id,due_by` and one row per late {noun} (any order), where "
                        f"`due_by` is its deadline in UTC written as YYYY-MM-DDTHH:MM:SSZ.",
            ask=f"Find every {noun} that missed its {k['event']} limit.",
            extra=["Leave the export as it is."],
            hint="Python's datetime.fromisoformat reads these timestamps once a trailing Z is written as +00:00.")
        s = inp.sample
        quotes = [f"“{d['sentence'].rstrip('.:')}" + ("”" if d.get("column") else ".”") for d in k["deadlines"]]
        return render(request, s.persona, s.tone, s.expertise, inp.seed), [*quotes, *conv, request.deliverable]

    def _rubric(self, inp: ShapeInput, p: Predicate, cat_field: str, out: str,
                conditions: tuple[str, ...] = ()) -> RubricSpec:
        """Must-do from the metrics; the rule's own polarity for the rest (the generator puts the skill's own
        warnings and advice on these lines first: compose/rubric.complete)."""
        k = p.params
        noun, nouns = k["noun"], plural(k["noun"])
        ds = k["deadlines"]
        strict, lax = ds[0], ds[-1]
        at = f"{p.source.file}:{strict['line']}"
        if len(ds) > 1:
            limits = ", ".join(f"{d['category']} {_limit_text(d)}" for d in ds)
            late = f"after the limit for its {cat_field} ({limits})"
            avoid = [Bullet(f"Holding {with_article(noun)} to another {cat_field}'s limit: the playbook gives "
                            f"{strict['category']} {_limit_text(strict)} and {lax['category']} {_limit_text(lax)}.",
                            at)]
            practice = [Bullet(f"Read each {noun}'s {cat_field} before choosing its limit, as the playbook's limits "
                               f"differ per {cat_field}.", at)]
        else:
            late = f"more than {_limit_text(strict)} after “{k.get('start_phrase') or k['start']}”"
            avoid = [Bullet(f"Starting the clock at another event than the one the playbook names: “"
                            f"{strict['sentence']}”.", at)]
            practice = [Bullet(f"Count each {noun}'s limit from “{k.get('start_phrase') or k['start']}” in the "
                               "rule's own unit.", at)]
        words = {"boundary": "the boundary", "open": f"the open {nouns}", "category": f"its own {cat_field}'s limit",
                 "extension": "the extension's condition", "unit": "the limit's unit", "offsets": "the UTC offsets",
                 "start event": "the event the clock starts at"}
        in_play = [w for c, w in words.items() if any(x.startswith(c + ":") for x in conditions)] or ["the boundary"]
        must = [Bullet(f"List in {out} every {noun} whose {k['event']} came {late}, and no other.",
                       "metric:every_condition"),
                Bullet(f"Give each late {noun}'s deadline in UTC, counted from its start in the limit's own unit.",
                       "metric:due_times"),
                Bullet(f"Apply every condition of the limits to every {noun} ({', '.join(in_play)}), none dropped.",
                       "metric:every_condition")]
        ext = next((d for d in ds if d["ext_amount"]), None)
        if ext:
            avoid.append(Bullet(f"Extending the limit of {with_article(noun)} for which the playbook's condition "
                                f"“{ext['ext_condition']}” is not met.", f"{p.source.file}:{ext['line']}"))
        return RubricSpec(must, avoid, practice)

    def _cheats(self, world: DeadlineWorld, out: str, export: str) -> dict[str, str]:
        ids = [r.id for r in world.records]
        open_ids = [r.id for r in world.records if r.end is None]
        starts = {r.id: utc(r.start) if r.start else "" for r in world.records}
        return {
            "every_record.sh": cheats.rows(out, "id,due_by", [f"{i},{starts[i]}" for i in ids]),
            "open_records.sh": cheats.rows(out, "id,due_by", [f"{i},{starts[i]}" for i in open_ids]),
            "header_only.sh": cheats.header_only(out, "id,due_by"),
            "echo_export.sh": cheats.copy(export, out),
        }

    def _challenges(self, inp: ShapeInput, world: DeadlineWorld, split: bool, late_metric: str,
                    cat_split: bool = False) -> list[Challenge]:
        strata = {r.stratum for r in world.records}
        text = {
            "boundary": ("records ending exactly at, and one minute past, their deadline", [late_metric]),
            "precondition": ("open records are late only once their deadline passed before the export",
                             [late_metric]),
            "split_sources": ("each record's category is in its own file" if cat_split else
                              "approved extensions are in their own file", ["due_times"]),
            "rule_in_docs": ("each category's limit is only in the quoted playbook lines", ["due_times"]),
        }
        # Boundary cases and open records are in every world; split sources only when realised.
        present = {"boundary", "precondition", *(["split_sources"] if split else []),
                   *(e for e in inp.effects if e == "rule_in_docs")}
        out = [Challenge(pattern="", dimension="", effect=e, instantiation=text[e][0], tested_by=text[e][1])
               for e in ("boundary", "precondition", "split_sources", "rule_in_docs") if e in present]
        if "stricter_only" not in strata and len(world.limits) > 1:
            raise ShapeError("no record sits between two categories' limits")
        return out

