"""audit_report / evidence_traceability: review a register against the skill's rules and list every breach with its
evidence (the measured number, the offending token or value).

Knowing the skill decides the answer: the limits, tokens and formats are the skill's, quoted in /app/docs; the
boundary values follow its exact wording ("under 50" vs "at most 50"), near-miss tokens are not breaches, and the
skill's own exceptions exempt some records. A keyword grep, an off-by-one reading or ignoring the exception fails.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, exception_bullet, pitfall_bullets, rule_bullet
from skill2env_dagster.tasks.predicates.entry_rules import COMPARATORS, FORMAT_NAMES, number
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.shapes.entry_files import (
    DATA_DIR,
    NAIVE,
    NOTES,
    REGISTRY,
    STALE_NOTES,
    STRATA,
    EntryLayout,
    kind_groups,
    layout,
    make_world,
    notes,
    render,
    solver_source,
    stale_notes,
    strata,
)
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric
from skill2env_dagster.tasks.worlds.entries import EntryWorld

OUT = "/app/out/findings.csv"
SUMMARY = "/app/out/summary.json"
DRAFT = "/app/out/findings.draft.csv"
HEADER = "id,rule,evidence"
ENTRY_KINDS = frozenset({"limit", "forbid_token", "require_token", "replace_token", "format"})

LOADER = '''
def load():
    rows = read_table(OUT, ["id", "rule", "evidence"])
    if rows is None:
        return None
    rows = [r + ("",) * (3 - len(r)) for r in rows]
    return {"findings": [r[:3] for r in rows if r[1] != "INVALID"],
            "invalid": [r[:1] for r in rows if r[1] == "INVALID"],
            "summary": read_json(SUMMARY)}
'''


def how(p: Predicate, world: EntryWorld) -> str:
    """How a rule applies to this register, for the best-practice bullet."""
    k, field = p.params, world.fields[p.id]
    if p.kind == "limit":
        return (f"by measuring the {k['unit']} of {field} and comparing with {number(k['value'])} exactly as "
                f"worded ({COMPARATORS[k['comparator']]})")
    if p.kind in ("forbid_token", "replace_token"):
        return f"by matching `{k['token']}` only as a whole token in {field}"
    if p.kind == "require_token":
        return f"by checking that {field} holds `{k['token']}` as a whole token"
    return f"by checking {field} against the full {FORMAT_NAMES[k['convention']]} pattern"


def entry_metrics(world: EntryWorld, inp: ShapeInput, expected: dict) -> list[Metric]:
    """The metrics of a findings list; edge, invalid and summary metrics only when their feature is in play."""
    ids = [p.id for p in world.preds]
    out = [
        Metric("breaches_found", "Jaccard of reported (record, rule) pairs against the planted breaches.",
               'return jaccard([f[:2] for f in EXPECTED["findings"]], [f[:2] for f in out["findings"]])',
               ("jaccard",), ids),
        Metric("evidence_exact", "Jaccard of (record, rule, evidence) triples: the measured number, token or value "
               "must be exact.", 'return jaccard(EXPECTED["findings"], out["findings"])', ("jaccard",), ids),
    ]
    for name in expected["strata"]:
        out.append(Metric(name, f"Share of decisions right on {STRATA[name]} (reported exactly when breached), "
                          "weighted by breaches_found.",
                          f'pairs = EXPECTED["strata"][{name!r}]\n'
                          'got = {(f[0], f[1]) for f in out["findings"]}\n'
                          'right = sum(((p[0], p[1]) in got) == (p[2] == "1") for p in pairs) / len(pairs)\n'
                          'return right * metric_breaches_found(out)', (), ids, optional=True))
    for group, rules in kind_groups(world).items():
        out.append(Metric(group, f"Jaccard of (record, rule) pairs for the {group} in play ({', '.join(rules)}).",
                          f'keep = {rules!r}\n'
                          'return jaccard([f[:2] for f in EXPECTED["findings"] if f[1] in keep],\n'
                          '               [f[:2] for f in out["findings"] if f[1] in keep])', ("jaccard",), rules,
                          optional=True))
    if world.invalid():
        out.append(Metric("invalid_rows", "Jaccard of the records reported as INVALID against the malformed rows.",
                          'return jaccard([[i] for i in EXPECTED["invalid"]], out["invalid"])', ("jaccard",)))
    if inp.has("dependent"):
        out.append(Metric("summary_counts", "summary.json gives each rule's breach count exactly (and agrees with "
                          "the list).", 'got = out["summary"]\n'
                          'if not isinstance(got, dict):\n    return 0.0\n'
                          'listed = Counter(f[1] for f in out["findings"])\n'
                          'listed["INVALID"] = len(out["invalid"])\n'
                          'pairs = [(k, v) for k, v in got.items() if listed.get(k) == v]\n'
                          'return exact_rate(EXPECTED["counts"], pairs)', ("exact_rate",), ids))
    return out


def _challenges(inp: ShapeInput, world: EntryWorld, lay: EntryLayout) -> list[Challenge]:
    text = {
        "split_sources": ("status and context are in registry.csv, the values in the register files; they must "
                          "be joined on id", ["breaches_found", "scope_respected"]),
        "distractor": ("an archived export and a superseded 2019 copy of the notes sit next to the current ones; "
                       "only the current notes and top-level files count", ["breaches_found", "evidence_exact"]),
        "encoding": ("the register uses ';' as delimiter and CRLF line ends", ["breaches_found"]),
        "dependent": ("summary.json must be computed from the finished list", ["summary_counts"]),
        "precondition": ("only active records are in scope, as the notes' preamble says; retired and draft "
                         "records breach rules but must not be reported", ["scope_respected"]),
        "corrupted": ("malformed rows must be reported as INVALID, not judged", ["invalid_rows"]),
        "validator": ("a format checker in /app/bin reports malformed findings lines", ["breaches_found"]),
        "partial_prior": ("a colleague's draft list is incomplete and partly wrong", ["breaches_found",
                                                                                        "evidence_exact"]),
        "boundary": ("boundary values and near-miss tokens decide several records", ["boundary_values",
                                                                                       "near_miss_tokens"]),
        "rule_in_docs": ("the rules are only in the quoted notes, not in the request", ["breaches_found"]),
        "multi_rule": ("records must be checked against several rules at once", ["limits", "tokens", "formats"]),
    }
    return [Challenge(pattern="", dimension="", effect=e, instantiation=text[e][0], tested_by=text[e][1])
            for e in inp.effects if e in text]


class EntryAudit:
    name = "entry_audit"
    archetype = "audit_report"
    verifier = "evidence_traceability"
    family = "entries"
    kinds = ENTRY_KINDS
    effects = frozenset({"split_sources", "distractor", "encoding", "dependent", "precondition", "corrupted",
                         "validator", "partial_prior", "boundary", "rule_in_docs", "multi_rule"})

    def design(self, inp: ShapeInput) -> Design:
        world = make_world(inp)
        lay = layout(world, inp)
        files: dict[str, str | bytes] = dict(render(world, lay))
        files[NOTES.lstrip("/")] = notes(inp, world)
        findings = world.findings()
        expected: dict[str, Any] = {"findings": [list(f) for f in findings], "invalid": world.invalid(),
                                    "strata": strata(world), "counts": dict(Counter(f[1] for f in findings))}
        if world.invalid():
            expected["counts"]["INVALID"] = len(world.invalid())
        if inp.has("distractor"):
            files[STALE_NOTES.lstrip("/")] = stale_notes(inp, world)
            old = make_world(inp.__class__(**{**inp.__dict__, "seed": inp.seed + 1}))
            for path, text in render(old, layout(old, inp)).items():
                if path.startswith(DATA_DIR.lstrip("/") + "/") and "registry" not in path:
                    files[path.replace("app/register/", "app/register/archive/")] = text
        if inp.has("partial_prior"):
            files[DRAFT.lstrip("/")] = self._draft(world, findings, inp)
        if inp.has("validator"):
            files["app/bin/check-findings"] = _validator([p.id for p in world.preds])
        metrics = entry_metrics(world, inp, expected)
        check = CheckScript(loader=LOADER, metrics=metrics, loader_needs=("read_table", "read_json"),
                            constants={"SEP": '","', "OUT": repr(OUT), "SUMMARY": repr(SUMMARY),
                                       "RULES": repr([p.id for p in world.preds])})
        main = self._main(inp)
        solver = solver_source(world, lay)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Review {len(world.entries)} register records against {len(world.preds)} of the playbook's "
                      f"rules and list every breach with exact evidence.",
            env_files=files,
            docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out" + (" && chmod +x /app/bin/check-findings"
                                                                        if inp.has("validator") else "")],
            slots=self._slots(inp, world, lay), check=check, expected=expected,
            rubric=self._rubric(inp, world), solve=solver_script(solver + main),
            wrong=solver_script(solver + NAIVE + main), cheats=self._cheats(world, inp),
            complexity=Complexity(level=inp.sample.complexity,
                                  files_to_read=len(lay.paths) + 1 + inp.has("partial_prior"),
                                  rules_in_play=len(world.preds), dependent_steps=1 + inp.has("dependent"),
                                  items=len(world.entries)),
            challenges=_challenges(inp, world, lay),
            facts=[f"{path}: {len(es)} records" for path, es in lay.files.items()]
            + [f"{NOTES}: the playbook's rules {', '.join(p.id for p in world.preds)}, quoted"]
            + ([f"{lay.paths[-1]}: status and context per record"] if lay.registry else []),
            boundary=InformationBoundary(
                stated=["where the records and the quoted rules are", "the output format and evidence semantics",
                        "whole-token matching"],
                discover=["each rule's exact limit, token or format (in the notes)"]
                + (["the playbook's exceptions"] if world.exempt else [])
                + (["that only active records are in scope (notes preamble)"] if world.scoped else [])
                + (["the delimiter and line ends"] if inp.has("encoding") else [])),
            docs=[NOTES], deliverables=[OUT, *([SUMMARY] if inp.has("dependent") else [])],
        )

    def _main(self, inp: ShapeInput) -> str:
        summary = ("\nfrom collections import Counter\ncounts = Counter(r for _, r, _ in found)\n"
                   "if invalid:\n    counts['INVALID'] = len(invalid)\n"
                   f"pathlib.Path({SUMMARY!r}).write_text(json.dumps(dict(counts)))\n") if inp.has("dependent") else ""
        return (f"\nfound, invalid = findings()\nout = pathlib.Path({OUT!r})\nout.parent.mkdir(parents=True, "
                f"exist_ok=True)\nlines = ['{HEADER}'] + [','.join(f) for f in found] + "
                f"[i + ',INVALID,' for i in invalid]\nout.write_text('\\n'.join(lines) + '\\n')\n{summary}")

    def _draft(self, world: EntryWorld, findings: list[tuple[str, str, str]], inp: ShapeInput) -> str:
        rng = inp.rng("draft")
        kept = rng.sample(findings, len(findings) // 2)
        wrong = [(e.id, world.preds[0].id, "?") for e in world.entries if e.context or not world.in_scope(e)][:2]
        return HEADER + "\n" + "".join(f"{a},{b},{c}\n" for a, b, c in sorted(kept + wrong))

    def _slots(self, inp: ShapeInput, world: EntryWorld, lay: EntryLayout) -> Slots:
        rng = inp.rng("slots")
        registry = f", with each id's status and context in {REGISTRY}" if lay.registry else ""
        semantics = ["Write one line per id and R-number it breaks, under the header `id,rule,evidence`, in any "
                     "order; evidence is the measured number for a limit, else the offending token or value."]
        if any(p.kind.endswith("token") for p in world.preds):
            semantics.append("A token counts only as a whole token, not inside a longer name or flag.")
        if world.invalid():
            semantics.append("A line missing a cell or with an unreadable number is listed once as `<id>,INVALID,` "
                             "instead of being judged.")
        if inp.has("dependent"):
            semantics.append(f"Then write {SUMMARY} mapping each R-number (and INVALID, if any) to how many lines "
                             "you listed for it.")
        if inp.has("distractor"):
            semantics.append(f"The current export is the files directly in {DATA_DIR}; the archive folder and "
                             "anything marked superseded are history.")
        cons = ["Leave the inputs and the notes as they are."]
        if inp.has("partial_prior"):
            cons.append(f"A colleague started in {DRAFT}; it is incomplete and not all of it is right.")
        if inp.has("validator"):
            cons.append("/app/bin/check-findings checks the format of the list (not whether it is right).")
        return Slots(
            topic=f"the {inp.topic} review",
            situation=rng.choice(["Before the next release everything has to meet our documented limits.",
                                  "The export drifted over the last quarter and we need to know where."]),
            inputs=f"The entries are the .csv files in {DATA_DIR}{registry}.",
            guidance=f"The rules are copied word for word into {NOTES}, numbered R1, R2 and so on.",
            ask=f"check every entry in {DATA_DIR} against them and list each breach",
            semantics=semantics, deliverable=f"Put the list in {OUT}.", constraints=cons,
            hint="Python 3 is available, and its csv module reads the files.",
            example="E999,R1,57", outputs=[OUT, SUMMARY, "/app/out"],
        )

    def _rubric(self, inp: ShapeInput, world: EntryWorld) -> RubricSpec:
        ids = ", ".join(p.id for p in world.preds)
        must_do = [Bullet(f"List every breach of {ids} in {OUT} with the exact measured number, token or value",
                          "metric:evidence_exact"),
                   Bullet("Judge boundary values, near-miss tokens and exempt records exactly as the rules are "
                          "worded", "metric:" + next(iter(strata(world)), "evidence_exact"))]
        if inp.has("dependent"):
            must_do.append(Bullet(f"Write {SUMMARY} with per-rule counts that match the list", "metric:summary_counts"))
        elif world.invalid():
            must_do.append(Bullet("Report malformed rows as INVALID instead of judging them", "metric:invalid_rows"))
        avoid = [exception_bullet(p, world.exempt[p.id]) for p in world.preds if world.exempt.get(p.id)][:1]
        avoid += pitfall_bullets(inp.knowledge, world.preds, 2 - len(avoid))
        avoid.append(Bullet("Listing records that break nothing, or the same breach twice", "metric:breaches_found"))
        practice = [rule_bullet(p, how(p, world)) for p in world.preds[:3]]
        return RubricSpec(must_do, avoid, practice)

    def _cheats(self, world: EntryWorld, inp: ShapeInput) -> dict[str, str]:
        every = [f"{e.id},{p.id},0" for e in sorted(world.entries, key=lambda x: x.id) for p in world.preds]
        out = {
            "list_everything.sh": cheats.rows(OUT, HEADER, every),
            "header_only.sh": cheats.header_only(OUT, HEADER),
            "first_record.sh": cheats.rows(OUT, HEADER, every[:1]),
            "example_only.sh": cheats.rows(OUT, HEADER, ["E999,R1,57"]),
            "junk_rows.sh": cheats.rows(OUT, HEADER, [f"X{i:03d},R{i % 3 + 1},{i * 7}" for i in range(12)]),
        }
        if inp.has("partial_prior"):
            out["copy_draft.sh"] = cheats.copy(DRAFT, OUT)
        if inp.has("dependent"):
            counts = {p.id: len(world.entries) for p in world.preds}
            out["summary_only.sh"] = cheats.text_file(SUMMARY, json.dumps(counts))
        return out


def _validator(rule_ids: list[str]) -> str:
    """A format checker for the findings list (never its correctness): the validation-error-loop pattern."""
    return f"""#!/usr/bin/env python3
\"\"\"Checks the format of /app/out/findings.csv: header, known rule ids, ids present in the register.\"\"\"
import csv, glob, pathlib, sys

RULES = {rule_ids!r} + ["INVALID"]
ids = set()
for path in glob.glob("/app/register/*.csv"):
    text = pathlib.Path(path).read_text().replace("\\r\\n", "\\n")
    sep = ";" if text.split("\\n", 1)[0].count(";") > text.split("\\n", 1)[0].count(",") else ","
    ids.update(r[0] for r in list(csv.reader(text.splitlines(), delimiter=sep))[1:] if r)
lines = pathlib.Path("{OUT}").read_text().splitlines() if pathlib.Path("{OUT}").exists() else []
errors = []
if not lines or lines[0].strip() != "{HEADER}":
    errors.append("line 1: the header must be {HEADER}")
for n, line in enumerate(lines[1:], 2):
    cells = line.split(",")
    if len(cells) != 3:
        errors.append(f"line {{n}}: want 3 cells, got {{len(cells)}}")
    elif cells[1] not in RULES:
        errors.append(f"line {{n}}: unknown rule {{cells[1]}}")
    elif cells[0] not in ids:
        errors.append(f"line {{n}}: unknown record {{cells[0]}}")
print("\\n".join(errors) or "format ok")
sys.exit(1 if errors else 0)
"""
