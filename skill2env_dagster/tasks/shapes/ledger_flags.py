"""audit_report / exact_state: a month's ledger export flagged with a bookkeeping skill's own review flags.

The skill labels its flags and states each one's condition (an empty field, an amount above a bound with an empty
field, two entries equal in two fields within N days); the export is the artifact those flags are raised on. The
conditions decide, read exactly: "above $75" leaves 75.00 out, "within 3 days" takes 3 days in, a duplicate needs
both fields equal, and an empty attachment on a small amount is not a missing receipt.
"""

from __future__ import annotations

import json
import random
import re
from datetime import date, timedelta
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.request import Request, render
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, lowest_over, lowest_per_label

EXPORT = "/app/ledger/entries.csv"
OUT = "/app/out/flags.csv"
HEADER = "entry_id,flag"
VENDORS = ("Acme Office Supply", "Northwind Couriers", "Blue Fern Cafe", "Metro Parking", "CloudHost Inc",
           "Pixel Print Shop", "Harbor Telecom", "Greenleaf Janitorial", "Summit Software", "Lakeside Catering",
           "Bright Electric", "Oak & Iron Hardware")
CATEGORIES = ("Office Supplies", "Postage", "Meals", "Travel", "Software", "Utilities", "Repairs", "Advertising")
MONTH = date(2026, 2, 1)

LOADER = '''
def load():
    rows = read_table(OUT, ["entry_id", "flag"])
    return None if rows is None else {"rows": [r + ("",) * (2 - len(r)) for r in rows]}
'''

SOLVER = r'''
import csv, json, pathlib
from datetime import date

SPEC = json.loads(__SPEC__)
with open(SPEC["export"], newline="") as fh:
    rows = list(csv.DictReader(fh))
flags = []
for f in SPEC["flags"]:
    if f["kind"] == "missing":
        flags += [(r["id"], f["label"]) for r in rows if not r[f["fields"][0]].strip()]
    elif f["kind"] == "above_missing":
        flags += [(r["id"], f["label"]) for r in rows
                  if float(r["amount"]) > f["value"] and not r[f["fields"][0]].strip()]
    else:
        a, b = f["fields"]
        hit = set()
        for i, x in enumerate(rows):
            for y in rows[i + 1:]:
                close = abs((date.fromisoformat(x["date"]) - date.fromisoformat(y["date"])).days) <= f["value"]
                if x[a] == y[a] and x[b] == y[b] and close:
                    hit |= {x["id"], y["id"]}
        flags += [(i, f["label"]) for i in sorted(hit)]
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("entry_id,flag\n" + "".join(f"{i},{lab}\n" for i, lab in flags))
'''

# The naive reading: "above" as "at least", any empty cell as a missing receipt, duplicates by amount alone.
NAIVE = r'''
import csv, json, pathlib

SPEC = json.loads(__SPEC__)
with open(SPEC["export"], newline="") as fh:
    rows = list(csv.DictReader(fh))
flags = []
for f in SPEC["flags"]:
    if f["kind"] == "missing":
        flags += [(r["id"], f["label"]) for r in rows if not r[f["fields"][0]].strip()]
    elif f["kind"] == "above_missing":
        flags += [(r["id"], f["label"]) for r in rows if float(r["amount"]) >= f["value"] and not all(r.values())]
    else:
        seen = {}
        for r in rows:
            seen.setdefault(r["amount"], []).append(r["id"])
        flags += [(i, f["label"]) for ids in seen.values() if len(ids) > 1 for i in ids]
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("entry_id,flag\n" + "".join(f"{i},{lab}\n" for i, lab in flags))
'''


def _money(x: float) -> str:
    return f"{x:.2f}"


def plant(flags: list[dict[str, Any]], n: int, rng: random.Random) -> tuple[list[dict[str, str]], dict[str, list[str]]]:
    """n base entries (distinct vendor and amount, all fields filled) plus the planted cases of every flag, and the
    entries planted to test each condition of each flag. Each condition gets more look-alikes than its flag has true
    cases, so a reading that drops it is wrong on most of what that flag decides: amounts exactly at the bound (a
    flat fee), small amounts with no receipt, pairs equal in one field only, recurring charges past the window."""
    fields = sorted({f for x in flags for f in x["fields"]} | {"vendor", "amount", "category"})
    base: list[dict[str, str]] = []
    used: set[tuple[str, str]] = set()
    while len(base) < n:
        vendor, amount = rng.choice(VENDORS), _money(rng.randrange(800, 40000) / 100)
        if (vendor, amount) in used:
            continue
        used.add((vendor, amount))
        day = MONTH + timedelta(days=rng.randrange(0, 27))
        row = {"date": day.isoformat(), "vendor": vendor, "amount": amount, "category": rng.choice(CATEGORIES)}
        for f in fields:
            row.setdefault(f, f"{f}_{len(base) + 1:03d}.pdf")
        base.append(row)
    extra: list[dict[str, str]] = []
    pristine = [dict(r) for r in base]  # planted entries copy these, never a base entry another flag blanked

    def add(row: dict[str, str], condition: str = "") -> None:
        extra.append(dict(row, _condition=condition))

    for x in flags:
        label = x["label"]
        if x["kind"] == "missing":
            rng.choice(base)[x["fields"][0]] = ""
            for vendor in rng.sample(VENDORS, 3):  # an export that pads empty cells with spaces
                row = dict(rng.choice(pristine), vendor=vendor, amount=_money(rng.randrange(900, 9000) / 100))
                row[x["fields"][0]] = "  "
                add(row, f"{label}: a cell of only spaces is empty")
        elif x["kind"] == "above_missing":
            bound, field = x["value"], x["fields"][0]
            cases = [(bound + 0.01, "", ""), (bound + rng.randrange(50, 900), "", ""),
                     (bound + rng.randrange(10, 200), f"{field}_x.pdf", f"{label}: an empty `{field}`")]
            cases += [(bound, "", f"{label}: above the bound, not at it")] * 3
            cases += [(bound - 0.01, "", f"{label}: the amount"), (bound - rng.randrange(5, 40), "",
                                                                      f"{label}: the amount"),
                      (round(bound / 3, 2), "", f"{label}: the amount")]
            for (amount, value, condition), vendor in zip(cases, rng.sample(VENDORS, len(cases)), strict=True):
                row = dict(rng.choice(pristine), amount=_money(amount), vendor=vendor)
                row[field] = value
                add(row, condition)
        else:
            a, b = x["fields"]
            window = int(x["value"])
            both = f"{label}: both `{a}` and `{b}` equal"
            last = f"{label}: the window takes in its last day"
            past = f"{label}: the window"
            pairs = [(window, "", last), (window, "", last), (max(0, window - 2), "", ""),
                     (window + 1, "", past), (window + 2, "", past), (window + 4, "", past),
                     (2 * window + 4, "", past),
                     (1, b, both), (0, a, both), (1, a, both), (min(2, window), a, both), (window, a, both)]
            for gap, differ, condition in pairs:
                first = dict(rng.choice(pristine))
                first[a] = rng.choice(VENDORS) if a == "vendor" else first[a]
                first["amount"] = _money(rng.randrange(1500, 90000) / 100)
                second = dict(first)
                d = date.fromisoformat(first["date"])
                second["date"] = (d + timedelta(days=gap)).isoformat()
                if differ:
                    other = {"amount": _money(float(second["amount"]) + 1.5)}.get(differ) or next(
                        v for v in rng.sample(VENDORS, len(VENDORS)) if v != second[differ])
                    second[differ] = other
                add(first, condition)
                add(second, condition)
    rows = base + extra
    rng.shuffle(rows)
    conditions: dict[str, list[str]] = {}
    for i, row in enumerate(rows):
        row["id"] = f"JE-{3101 + i}"
        row["memo"] = rng.choice(("", "monthly", "per invoice", "card payment", "reimbursed"))
        condition = row.pop("_condition", "")
        if condition:
            conditions.setdefault(condition, []).append(row["id"])
    return rows, conditions


def expected_flags(rows: list[dict[str, str]], flags: list[dict[str, Any]]) -> list[list[str]]:
    out: list[list[str]] = []
    for f in flags:
        if f["kind"] == "missing":
            out += [[r["id"], f["label"]] for r in rows if not r[f["fields"][0]].strip()]
        elif f["kind"] == "above_missing":
            out += [[r["id"], f["label"]] for r in rows
                    if float(r["amount"]) > f["value"] and not r[f["fields"][0]].strip()]
        else:
            a, b = f["fields"]
            hit: set[str] = set()
            for i, x in enumerate(rows):
                for y in rows[i + 1:]:
                    gap = abs((date.fromisoformat(x["date"]) - date.fromisoformat(y["date"])).days)
                    if x[a] == y[a] and x[b] == y[b] and gap <= f["value"]:
                        hit |= {x["id"], y["id"]}
            out += [[i, f["label"]] for i in sorted(hit)]
    return sorted(out)


class LedgerFlags:
    name = "ledger_flags"
    archetype = "audit_report"
    verifier = "exact_state"
    family = "flags"
    kinds = frozenset({"flag"})
    max_preds = 1
    effects = frozenset({"boundary", "multi_rule", "rule_in_docs"})

    def design(self, inp: ShapeInput) -> Design:
        p = inp.preds[0]
        flags = p.params["flags"]
        rng = inp.rng("ledger")
        rows, conditions = plant(flags, 14 + 4 * inp.level, rng)
        columns = ["id", "date", "vendor", "amount", "category",
                   *sorted({f for x in flags for f in x["fields"]} - {"vendor", "amount", "category"}), "memo"]
        csv_text = ",".join(columns) + "\n" + "".join(
            ",".join(_cell(r.get(c, "")) for c in columns) + "\n" for r in rows)
        expected_rows = expected_flags(rows, flags)
        if not expected_rows or len(expected_rows) * 2 > len(rows) * len(flags):
            raise ValueError("the planted ledger gives no flag or too many")
        doc = f"/app/docs/{re.sub(r'[^a-z0-9]+', '-', inp.text.name.lower()).strip('-')}-review-flags.md"
        files: dict[str, str | bytes] = {EXPORT.lstrip("/"): csv_text, doc.lstrip("/"): self._excerpt(inp.text, p)}
        labels = [f["label"] for f in flags]
        spec = {"export": EXPORT, "out": OUT, "flags": flags}
        metrics = [
            lowest_per_label('EXPECTED["flags"]', 'out["rows"]', 1, "labels", "every_flag",
                             "The lowest, over the skill's flags, of the Jaccard of the entries reported under that "
                             "flag with the entries it raises on (an entry flagged wrongly, or twice, costs as much "
                             "as a missed one), times the share of reported rows that carry one of the playbook's "
                             "labels: every flag's condition must be applied, and a row under a label the playbook "
                             "does not have is wrong.", [p.id]),
            lowest_over("conditions", 'EXPECTED["flags"]', 'out["rows"]', 1, "every_condition",
                        "The lowest, over the conditions of the flags (the bound, the amount, an empty field, both "
                        "fields of a duplicate, the window), of the Jaccard of the (entry, flag) rows about the "
                        "entries planted to test that condition (1 when none of them raises a flag and none is "
                        "reported): a reading that drops one condition scores 0 here.", [p.id]),
        ]
        check = CheckScript(LOADER, metrics, {"SEP": '","', "OUT": repr(OUT)}, ("read_table",))
        text, stated = self._instruction(inp, p, doc, columns)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Flag the {len(rows)} entries of a month's ledger export with the skill's {len(flags)} review "
                      "flags.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=Slots(topic="", situation="", ask="", inputs="", guidance="", semantics=[], deliverable="",
                        outputs=[OUT, "/app/out"], text=text),
            stated=stated, check=check, expected={"flags": expected_rows, "labels": labels, "conditions": conditions},
            rubric=self._rubric(p), solve=solver_script(SOLVER.replace("__SPEC__", repr(json.dumps(spec)))),
            wrong=solver_script(NAIVE.replace("__SPEC__", repr(json.dumps(spec)))),
            cheats={"every_entry_every_flag.sh": cheats.rows(OUT, HEADER, [f"{r['id']},{lab}" for r in rows
                                                                          for lab in labels]),
                    "header_only.sh": cheats.header_only(OUT, HEADER)},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=2, rules_in_play=len(flags),
                                  dependent_steps=2, items=len(rows)),
            challenges=[Challenge(pattern="", dimension="", effect="boundary",
                                  instantiation="amounts at and just past the bound, duplicates at and one day past "
                                                "the window, look-alike pairs equal in one field only",
                                  tested_by=["every_condition"])],
            facts=[f"{EXPORT}: {len(rows)} ledger entries", f"{doc}: the skill's review flags, quoted"],
            boundary=InformationBoundary(stated=["each flag and its condition, quoted and read exactly",
                                                 "the output layout"],
                                         discover=["which entries meet which condition"]),
            docs=[doc], deliverables=[OUT],
        )

    def _excerpt(self, text: SkillText, p: Predicate) -> str:
        heading = text.heading_above(p.source.file, p.source.line)
        lines = [text.lines(p.source.file)[f["line"] - 1] for f in p.params["flags"]]
        return "\n".join([f"# {text.name}: review flags", "", "Quoted from our playbook.", "",
                          f"## {heading}" if heading else "", "", *lines]).rstrip() + "\n"

    def _instruction(self, inp: ShapeInput, p: Predicate, doc: str, columns: list[str]) -> tuple[str, list[str]]:
        each = []
        for f in p.params["flags"]:
            quoted = f"“{f['sentence'].rstrip('.')}.”"
            if f["kind"] == "missing":
                reading = f"an entry whose `{f['fields'][0]}` is empty"
            elif f["kind"] == "above_missing":
                reading = (f"an entry whose `amount` is above {f['value']:.2f} ({f['value']:.2f} itself is not) "
                           f"and whose `{f['fields'][0]}` is empty")
            else:
                a, b = f["fields"]
                reading = (f"both entries of any two with the same `{a}` and the same `{b}` whose dates are at most "
                           f"{int(f['value'])} days apart")
            each.append(f"{quoted} We read it as: `{f['label']}` is {reading}.")
        request = Request(
            situation=f"Before the month is closed we raise our {inp.text.name} playbook's review flags on the ledger "
                      f"export {EXPORT} (columns {', '.join(f'`{c}`' for c in columns)}); the playbook's flags are "
                      f"quoted in {doc}.",
            rules=" ".join(each),
            conventions="A cell is empty when it holds nothing or only spaces; amounts are compared as numbers, "
                        "dates as calendar days. An entry gets one row per flag it raises.",
            deliverable=f"Write {OUT} with the header `{HEADER}` and one row per raised flag (any order): the "
                        "entry's `id` and the flag's label exactly as written above.",
            ask="Raise the review flags on the ledger export.", extra=["Do not edit the export."],
            hint="Python's csv.DictReader reads the export; datetime.date.fromisoformat reads its dates.")
        s = inp.sample
        stated = [*each, request.conventions, request.deliverable]
        return render(request, s.persona, s.tone, s.expertise, inp.seed), stated

    def _rubric(self, p: Predicate) -> RubricSpec:
        flags = p.params["flags"]
        must = [Bullet("Raise every flag whose condition an entry meets, and no other.", "metric:every_flag"),
                Bullet("Apply every condition of each flag (its bound, its field, both fields and the window of a "
                       "duplicate), none dropped.", "metric:every_condition")]
        avoid = []
        for f in flags:
            at = f"{p.source.file}:{f['line']}"
            if f["kind"] == "above_missing":
                avoid.append(Bullet(f"Raising `{f['label']}` for an entry of {f['value']:.2f} or less.", at))
            elif f["kind"] == "same_within":
                avoid.append(Bullet(f"Raising `{f['label']}` for entries equal in one field only, or more than "
                                    f"{int(f['value'])} days apart.", at))
        practice = [Bullet("Check every entry against every flag before the month is closed.",
                           f"{p.source.file}:{flags[0]['line']}")]
        return RubricSpec(must, avoid or [Bullet("Raising a flag whose condition the entry does not meet.",
                                                 f"{p.source.file}:{flags[0]['line']}")], practice)


def _cell(value: str) -> str:
    return f'"{value}"' if "," in value else value
