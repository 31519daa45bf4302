"""audit_report / evidence_traceability: a repository's SQL migrations checked against the column types a skill
forbids, each finding with the forbidden type as the skill spells it.

The skill's list decides with its spelling rules: `varchar(n)` is any length but not plain `text`, `timestamptz(0)`
"or any other precision" is every precision but not plain `timestamptz`, `timestamp` (without time zone) is not
`timestamp with time zone`; letter case never matters. The look-alikes a grep finds are not declarations: a
column named after a type (`created_timestamp`, `money_due`), the type in a comment, an allowed type that contains
a forbidden one's name (`timestamptz`).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.request import Request, render
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec
from skill2env_dagster.tasks.predicates.sqltypes import declared, type_name
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, lowest_over, lowest_per_label

MIGRATIONS = "/app/db/migrations"
OUT = "/app/out/type_findings.csv"
HEADER = "file,table,column,type"
TABLES = {
    "customers": ["email", "full_name", "country_code", "created_at", "updated_at", "loyalty_points"],
    "orders": ["customer_id", "status", "placed_at", "total_amount", "currency", "shipped_at"],
    "invoices": ["order_id", "number", "issued_on", "amount_due", "paid_at", "notes"],
    "shipments": ["order_id", "carrier", "tracking_code", "dispatched_at", "delivered_at", "weight_grams"],
    "audit_log": ["actor", "action", "happened_at", "payload", "ip_address", "request_id"],
    "products": ["sku", "title", "price", "stock", "created_at", "discontinued_at"],
}
ALLOWED = {"email": "text", "full_name": "text", "country_code": "text", "status": "text", "currency": "text",
           "number": "text", "notes": "text", "carrier": "text", "tracking_code": "text", "actor": "text",
           "action": "text", "sku": "text", "title": "text", "payload": "jsonb", "ip_address": "inet",
           "request_id": "uuid", "issued_on": "date", "loyalty_points": "integer", "weight_grams": "integer",
           "stock": "integer", "customer_id": "bigint", "order_id": "bigint", "total_amount": "numeric(12,2)",
           "amount_due": "numeric(12,2)", "price": "numeric(10,2)"}

LOADER = '''
def load():
    rows = read_table(OUT, ["file", "table", "column", "type"])
    return None if rows is None else {"rows": [r + ("",) * (4 - len(r)) for r in rows]}
'''

SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)


def declared(type_text):
    text = " ".join(type_text.lower().split())
    name = re.split(r"[\s(]", text, maxsplit=1)[0]
    params = re.search(r"\(([^)]*)\)", text)
    for t in SPEC["types"]:
        if t["name"] != name:
            continue
        if t["parameterised"] == "" and not re.search(r"\bwith time zone\b", text):
            return t
        if t["parameterised"] == "any" and params:
            return t
        if params and t["parameterised"].replace(" ", "") == params.group(1).replace(" ", ""):
            return t
    return None


rows = []
for path in sorted(pathlib.Path(SPEC["dir"]).glob("*.sql")):
    table = None
    for raw in path.read_text().splitlines():
        line = raw.split("--", 1)[0].strip()
        m = re.match(r"create table (?:if not exists )?(\w+)", line, re.I)
        if m:
            table = m.group(1)
            continue
        m = re.match(r"(\w+)\s+(.+?)(?:\s+(?:not null|null|primary key|unique|default|references|check|"
                     r"generated)\b.*)?,?$", line, re.I)
        if table and m and not re.match(r"(primary|unique|constraint|foreign|check)\b", line, re.I):
            t = declared(m.group(2).rstrip(","))
            if t:
                rows.append((path.name, table, m.group(1), t["spelling"]))
        if line.startswith(")"):
            table = None
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("file,table,column,type\n" + "".join(",".join(r) + "\n" for r in rows))
'''

# The naive reading: a case-insensitive search for each forbidden type's name on every line, comments included.
NAIVE = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)
rows = []
for path in sorted(pathlib.Path(SPEC["dir"]).glob("*.sql")):
    table = None
    for line in path.read_text().splitlines():
        m = re.match(r"\s*create table (\w+)", line, re.I)
        if m:
            table = m.group(1)
            continue
        words = line.strip().split()
        for t in SPEC["types"]:
            if table and words and t["name"] in line.lower():
                rows.append((path.name, table, words[0], t["spelling"]))
                break
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("file,table,column,type\n" + "".join(",".join(r) + "\n" for r in rows))
'''


@dataclass
class Column:
    name: str
    type: str
    rest: str = ""  # constraints after the type
    comment: str = ""
    finding: str = ""  # the forbidden spelling it breaks ("" when allowed)
    commented: bool = False  # a declaration commented out (a column dropped earlier): not a declaration
    condition: str = ""  # the condition of the list this column was planted to test


def _violation(t: dict[str, Any], rng: random.Random) -> str:
    """A declared type that the forbidden entry `t` catches, in a spelling a migration might use."""
    name = str(t["name"])
    upper = rng.random() < 0.5
    if t["parameterised"] == "any":
        text = f"{name}({rng.choice((3, 10, 64, 255))})" if name not in ("numeric", "decimal") else f"{name}(10,2)"
        text = f"{name}(3)" if name in ("timestamptz", "timestamp", "time", "timetz") else text
    elif t["parameterised"]:
        text = f"{name}({t['parameterised']})"
    else:
        text = name
    return text.upper() if upper else text


def _allowed_alike(t: dict[str, Any]) -> str | None:
    """An allowed type that shares the forbidden one's name or spelling."""
    name = str(t["name"])
    if name == "timestamp":
        return "timestamp with time zone"
    if t["parameterised"] == "any" and name in ("timestamptz", "time"):
        return name  # the unparameterised type is the one the skill recommends
    return None


def plant(types: list[dict[str, Any]], n_files: int, rng: random.Random) -> list[tuple[str, str, list[Column]]]:
    """(file name, table, columns): every forbidden type declared once at least, look-alikes around them."""
    names = list(TABLES)[:n_files]
    tables: list[tuple[str, str, list[Column]]] = []
    for i, name in enumerate(names):
        cols = [Column("id", "bigint", "generated always as identity primary key")]
        for c in TABLES[name]:
            allowed = "timestamptz" if c.endswith("_at") else ALLOWED.get(c, "text")
            cols.append(Column(c, allowed, "not null" if rng.random() < 0.4 else ""))
        tables.append((f"{i + 1:03d}_create_{name}.sql", name, cols))
    slots = [(ti, ci) for ti, (_, _, cols) in enumerate(tables) for ci in range(1, len(cols))]
    rng.shuffle(slots)
    k = 0
    for t in types:  # a violation of each type, and two of its look-alikes where it has one
        ti, ci = slots[k]
        k += 1
        col = tables[ti][2][ci]
        col.type, col.finding = _violation(t, rng), str(t["spelling"])
        col.condition = "letter case" if col.type != col.type.lower() else ""
        alike = _allowed_alike(t)
        for _ in range(2 if alike and k + 2 <= len(slots) else 0):
            ti, ci = slots[k]
            k += 1
            other = tables[ti][2][ci]
            other.type = str(alike).upper() if rng.random() < 0.5 else str(alike)
            other.condition = "allowed types that contain a forbidden name"
    for ti, (_, table_name, cols) in enumerate(tables):  # columns named after a type, and comments that mention one
        named = types[ti % len(types)]
        cols.append(Column(f"{type_name(str(named['spelling']))}_note", "text", "",
                           f"was {_violation(named, rng)} before the 2024 cleanup", condition="a column's name"))
        # Declarations commented out when their columns were dropped (two of one type in the first table, so a
        # reading that keeps them is wrong on most of that type).
        dropped = types[(ti + 1) % len(types)]
        for j in range(2 if ti == 0 else 1):
            cols.insert(len(cols) - 1, Column(f"legacy_{table_name}_{j + 1}", _violation(dropped, rng), "",
                                              commented=True, condition="a comment is not a declaration"))
    if len([c for _, _, cols in tables for c in cols if c.finding]) * 3 > sum(len(c) for _, _, c in tables):
        raise ValueError("too many findings for the tables planted")
    return tables


def render_sql(table: str, cols: list[Column]) -> str:
    lines = [f"-- {table}: created by the platform team", f"CREATE TABLE {table} ("]
    for i, c in enumerate(cols):
        if c.commented:
            lines.append(f"  -- {c.name} {c.type},  (dropped)")
            continue
        comma = "," if i < len(cols) - 1 else ""
        body = f"  {c.name} {c.type}" + (f" {c.rest}" if c.rest else "") + comma
        lines.append(body + (f"  -- {c.comment}" if c.comment else ""))
    lines.append(");")
    return "\n".join(lines) + "\n"


class SqlTypeAudit:
    name = "sql_type_audit"
    archetype = "audit_report"
    verifier = "evidence_traceability"
    family = "sqltypes"
    kinds = frozenset({"sqltype"})
    max_preds = 1
    effects = frozenset({"boundary", "distractor", "rule_in_docs"})

    def design(self, inp: ShapeInput) -> Design:
        p = inp.preds[0]
        types = p.params["types"]
        rng = inp.rng("migrations")
        tables = plant(types, min(len(TABLES), 3 + inp.level), rng)
        files: dict[str, str | bytes] = {}
        rows: list[list[str]] = []
        conditions: dict[str, list[str]] = {}
        for fname, table, cols in tables:
            files[f"app/db/migrations/{fname}"] = render_sql(table, cols)
            for c in cols:
                t = None if c.commented else declared(c.type, types)
                if t:
                    rows.append([fname, table, c.name, str(t["spelling"])])
                if c.condition:
                    conditions.setdefault(c.condition, []).append(f"{fname}|{table}|{c.name}")
        assert sorted(r[2] for r in rows) == sorted(c.name for _, _, cols in tables for c in cols if c.finding)
        doc = f"/app/docs/{re.sub(r'[^a-z0-9]+', '-', inp.text.name.lower()).strip('-')}-column-types.md"
        files[doc.lstrip("/")] = self._excerpt(inp.text, p)
        expected = {"findings": sorted(rows), "spellings": sorted({str(t["spelling"]) for t in types}),
                    "conditions": conditions}
        spec = {"dir": MIGRATIONS, "out": OUT, "types": types}
        metrics = [
            lowest_per_label('EXPECTED["findings"]', '[r[:4] for r in out["rows"]]', 3, "spellings", "columns",
                             "The lowest, over the forbidden types, of the Jaccard of the reported (file, table, "
                             "column, type) rows under that type with the columns declared with it (an allowed "
                             "column listed, one listed twice or under another spelling, costs as much as a missed "
                             "one), times the share of rows naming a type of the list: every type must be found.",
                             [p.id]),
            lowest_over("conditions", 'EXPECTED["findings"]', '[r[:4] for r in out["rows"]]', 3, "every_condition",
                        "The lowest, over the list's conditions (letter case, allowed types that contain a forbidden "
                        "name, a column's name, a comment), of the Jaccard of the rows about the columns planted to "
                        "test that condition (1 when none of them is forbidden and none is reported): a reading that "
                        "drops one condition scores 0 here.", [p.id]),
        ]
        check = CheckScript(LOADER, metrics, {"SEP": '","', "OUT": repr(OUT)}, ("read_table",))
        text, stated = self._instruction(inp, p, doc)
        n_cols = sum(len(c) for _, _, c in tables)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Find the columns of {len(tables)} migrations ({n_cols} columns) declared with a type the skill "
                      "forbids, each with the forbidden type as the skill spells it.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=Slots(topic="", situation="", ask="", inputs="", guidance="", semantics=[], deliverable="",
                        outputs=[OUT, "/app/out"], text=text),
            stated=stated, check=check, expected=expected, rubric=self._rubric(p),
            solve=solver_script(SOLVER.replace("__SPEC__", repr(json.dumps(spec)))),
            wrong=solver_script(NAIVE.replace("__SPEC__", repr(json.dumps(spec)))),
            cheats={"every_column.sh": cheats.rows(OUT, HEADER, [f"{tables[0][0]},{tables[0][1]},{c.name},"
                                                                  f"{types[0]['spelling']}" for c in tables[0][2]]),
                    "header_only.sh": cheats.header_only(OUT, HEADER)},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=len(tables) + 1,
                                  rules_in_play=len(types), dependent_steps=2, items=n_cols),
            challenges=[Challenge(pattern="", dimension="", effect="boundary",
                                  instantiation="allowed types that contain a forbidden one's name, columns named "
                                                "after a type, types in comments, upper-case spellings",
                                  tested_by=["columns"])],
            facts=[f"{MIGRATIONS}: {len(tables)} CREATE TABLE migrations", f"{doc}: the forbidden types, quoted"],
            boundary=InformationBoundary(stated=["the forbidden types, quoted", "how a spelling is matched",
                                                 "the output layout"],
                                         discover=["which columns are declared with which type"]),
            docs=[doc], deliverables=[OUT],
        )

    def _excerpt(self, text: SkillText, p: Predicate) -> str:
        heading = text.heading_above(p.source.file, p.source.line)
        lines = list(dict.fromkeys(text.lines(p.source.file)[t["line"] - 1] for t in p.params["types"]))
        return "\n".join([f"# {text.name}: column types", "", "Quoted from our playbook.", "",
                          f"## {heading}" if heading else "", "", *lines]).rstrip() + "\n"

    def _instruction(self, inp: ShapeInput, p: Predicate, doc: str) -> tuple[str, list[str]]:
        types = p.params["types"]
        quotes = " ".join(f"“{s.rstrip('.')}.”" for s in dict.fromkeys(t["sentence"] for t in types))
        listed = ", ".join(f"`{t['spelling']}`" for t in types)
        rules = f"The playbook says: {quotes} So the forbidden types are {listed}."
        conv = ["Letter case does not matter. A spelling with `(n)` or `(p)`, or one followed by “or any other "
                "precision specification”, stands for the type with any parameters in parentheses, and not for the "
                "type without them; a spelling without parentheses stands for the type with or without parameters. "
                "`timestamp with time zone` is not `timestamp`.",
                "Only a column declaration counts: the type right after a column's name in a CREATE TABLE; a "
                "comment (from `--` to the end of the line) is not a declaration, and a column's name is not its "
                "type."]
        request = Request(
            situation=f"Before we merge the new schema we check its migrations against the column types our "
                      f"{inp.text.name} playbook forbids. The migrations are the `.sql` files in {MIGRATIONS}, and "
                      f"the playbook's list is quoted in {doc}.",
            rules=rules, conventions=" ".join(conv),
            deliverable=f"Write {OUT} with the header `{HEADER}` and one row per offending column (any order): the "
                        "migration's file name, the table, the column, and the forbidden type as the playbook "
                        "spells it in the list above.",
            ask="Find every column declared with a forbidden type.", extra=["Do not change the migrations."],
            hint="Read the CREATE TABLE blocks line by line; each column is on a line of its own.")
        s = inp.sample
        return render(request, s.persona, s.tone, s.expertise, inp.seed), [rules, *conv, request.deliverable]

    def _rubric(self, p: Predicate) -> RubricSpec:
        types = p.params["types"]
        at = f"{p.source.file}:{types[0]['line']}"
        must = [Bullet("Report every column declared with a forbidden type, and no other, each with the type as the "
                       "playbook spells it.", "metric:columns"),
                Bullet("Apply every condition of the list (letter case, the spelling rules, declarations only), "
                       "none dropped.", "metric:every_condition")]
        avoid = [Bullet(f"Flagging a column because its name or a comment mentions `{types[0]['name']}`.", at)]
        alike = next((t for t in types if t["name"] == "timestamp"), None)
        if alike:
            avoid.append(Bullet("Flagging `timestamp with time zone` or `timestamptz`, which the playbook asks for.",
                                f"{p.source.file}:{alike['line']}"))
        practice = [Bullet(f"Read each forbidden type together with the one the playbook names instead "
                           f"({types[0]['spelling']}: use {types[0]['instead']}), so a column already declared with "
                           "the replacement is not reported.", at)]
        return RubricSpec(must, avoid, practice)
