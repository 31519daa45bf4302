"""data_query / exact_state: decide a batch of cases with one of the skill's reference tables (a taxonomy with
signal words, a lookup of codes, levels, owners…), quoted verbatim in /app/docs.

The table is the skill's knowledge; near-miss keys and notes without a signal word must come out `unknown`
instead of being guessed, and letter case or stray spaces must not change an answer.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary
from skill2env_dagster.tasks.compose.docs import notes_doc
from skill2env_dagster.tasks.compose.grammar import with_article
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, pitfall_bullets
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric
from skill2env_dagster.tasks.worlds.cases import UNKNOWN, CaseWorld, build

CASES = "/app/cases/cases.tsv"
STATUS = "/app/cases/status.tsv"
DOC = "/app/docs/reference.md"
STALE = "/app/docs/reference-old.md"
OUT = "/app/out/answers.tsv"
COUNTS = "/app/out/counts.json"

PRECISION = 'precision([c for c, _ in out["rows"]], EXPECTED["answers"])'  # see the checkpy helper

LOADER = '''
def load():
    rows = read_table(OUT, ["case", ANSWER] + (["line"] if EVIDENCE else []))
    if rows is None:
        return None
    rows = [r + ("", "") for r in rows]
    return {"rows": [(r[0], r[1]) for r in rows], "cited": [r[:3] for r in rows], "counts": read_json(COUNTS)}
'''
EVIDENCE_SOLVER = '''
_value = answer


def answer(text):
    got = _value(text)
    if got == "unknown":
        return "unknown\\t"
    if SPEC["mode"] == "classify":
        low = text.lower()
        word = next(w for w in SPEC["mapping"] if re.search(r"(?<![\\w-])" + re.escape(w) + r"(?![\\w-])", low))
        return got + "\\t" + SPEC["lines"][word]
    return got + "\\t" + SPEC["lines"][text.strip().lower()]
'''

SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)


def answer(text):
    if SPEC["mode"] == "classify":
        low = text.lower()
        hits = {v for w, v in SPEC["mapping"].items() if re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", low)}
        return hits.pop() if len(hits) == 1 else "unknown"
    return SPEC["mapping"].get(text.strip().lower(), "unknown")


def collect():
    status = {}
    if SPEC["status"]:
        for ln in pathlib.Path(SPEC["status"]).read_text().splitlines()[1:]:
            cid, st = ln.split("\t")
            status[cid] = st
    rows = []
    for ln in pathlib.Path(SPEC["cases"]).read_text().splitlines()[1:]:
        cid, text, *rest = ln.split("\t")
        if SPEC["scoped"] and status.get(cid, rest[0] if rest else "open") != "open":
            continue
        rows.append((cid, answer(text)))
    return rows
'''

MAIN = '''
rows = collect()
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("\\n".join(["case\\t" + SPEC["answer_col"]] + ["\\t".join(r) for r in rows]) + "\\n")
if SPEC["counts"]:
    from collections import Counter
    pathlib.Path(SPEC["counts"]).write_text(json.dumps(dict(Counter(a for _, a in rows))))
'''

NAIVE = '''
# The naive reading: case-sensitive substring matches, no normalisation, the nearest key for anything unknown, and
# every case counts.
def answer(text):
    if SPEC["mode"] == "classify":
        hits = sorted(v for w, v in SPEC["mapping"].items() if w in text)
        return hits[0] if hits else "unknown"
    if text in SPEC["mapping"]:
        return SPEC["mapping"][text]
    low = text.strip().lower()
    for key, value in SPEC["mapping"].items():
        if key in low or low in key:
            return value
    return "unknown"


def collect():
    return [(cid, answer(text.split("\\t")[0])) for cid, text in
            (ln.split("\\t", 1) for ln in pathlib.Path(SPEC["cases"]).read_text().splitlines()[1:])]
'''


def col_name(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:30] or "answer"


class TableCases:
    evidence = False
    name = "table_cases"
    archetype = "data_query"
    verifier = "exact_state"
    family = "table"
    kinds = frozenset({"lookup"})
    max_preds = 1
    effects = frozenset({"split_sources", "distractor", "dependent", "precondition", "boundary", "rule_in_docs"})

    def design(self, inp: ShapeInput) -> Design:
        pred = inp.preds[0]
        # Split sources put the case status in its own file, so they always come with a status that decides.
        world = build(pred, 12 + 5 * inp.level, inp.rng("cases"), inp.vocabulary,
                      precondition=inp.has("precondition") or inp.has("split_sources"))
        answer_col = col_name(world.answer_col)
        split = inp.has("split_sources") and world.scoped
        files: dict[str, str | bytes] = {}
        rows = [f"{c.id}\t{c.text}" + ("" if split or not world.scoped else f"\t{c.status}") for c in world.cases]
        head = "case\t" + ("note" if world.mode == "classify" else col_name(world.key_col))
        head += "" if split or not world.scoped else "\tstatus"
        files[CASES.lstrip("/")] = head + "\n" + "\n".join(rows) + "\n"
        if split:
            files[STATUS.lstrip("/")] = "case\tstatus\n" + "".join(f"{c.id}\t{c.status}\n" for c in world.cases)
        files[DOC.lstrip("/")] = notes_doc(f"Reference: {pred.subject}", inp.text, [pred],
                                           f"Quoted from our {inp.text.name} playbook.")
        if inp.has("distractor"):
            files[STALE.lstrip("/")] = self._stale(world)
        expected: dict[str, Any] = {"answers": world.expected(),
                    "unknown": sorted(cid for cid, a in world.expected().items() if a == UNKNOWN),
                    "counts": dict(Counter(world.expected().values())),
                    "closed": sorted(c.id for c in world.cases if not world.in_scope(c))}
        lines = self._row_lines(inp, world, str(files[DOC.lstrip("/")]))
        if self.evidence:
            expected["cited"] = sorted([c.id, c.answer, lines[c.row] if c.row >= 0 else ""]
                                       for c in world.cases if world.in_scope(c))
        metrics = self._metrics(world, expected, inp.has("dependent"))
        spec = {"mode": world.mode, "mapping": world.mapping, "cases": CASES, "status": STATUS if split else "",
                "scoped": world.scoped,
                "out": OUT, "answer_col": answer_col + ("\tline" if self.evidence else ""),
                "counts": COUNTS if inp.has("dependent") else "", "lines": self._key_lines(world, lines)}
        solver = SOLVER.replace("__SPEC__", repr(json.dumps(spec))) + (EVIDENCE_SOLVER if self.evidence else "")
        check = CheckScript(LOADER, metrics, {"SEP": '"\\t"', "OUT": repr(OUT), "COUNTS": repr(COUNTS),
                                              "ANSWER": repr(answer_col), "EVIDENCE": repr(self.evidence)},
                            ("read_table", "read_json"))
        n = len(world.cases)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Decide {n} cases with the playbook's {pred.subject!r} table and write each case's "
                      f"{world.answer_col}.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=self._slots(inp, world, answer_col, split), check=check, expected=expected,
            rubric=self._rubric(inp, world), solve=solver_script(solver + MAIN),
            wrong=solver_script(solver + NAIVE + (EVIDENCE_SOLVER if self.evidence else "") + MAIN),
            cheats=self._cheats(world, answer_col),
            complexity=Complexity(level=inp.sample.complexity, files_to_read=2 + split, rules_in_play=len(
                world.pred.params["rows"]), dependent_steps=1 + inp.has("dependent"), items=n),
            challenges=self._challenges(inp, world),
            facts=[f"{CASES}: {n} cases", f"{DOC}: the playbook's table {pred.subject!r}, quoted"]
            + ([f"{STATUS}: open/closed per case"] if split else []),
            boundary=InformationBoundary(
                stated=["where the cases and the quoted table are", "matching rules and output format"],
                discover=[f"the {world.answer_col} of each {world.key_col} (in the table)"]
                + (["that closed cases are out of scope"] if world.scoped else [])),
            docs=[DOC], deliverables=[OUT, *([COUNTS] if inp.has("dependent") else [])],
        )

    def _row_lines(self, inp: ShapeInput, world: CaseWorld, doc: str) -> list[str]:
        """Per table row, the line of the shipped reference doc that holds it (1-based, as text)."""
        src = world.pred.source
        doc_lines = doc.splitlines()
        out = []
        for n in world.pred.params["lines"]:
            text = inp.text.lines(src.file)[n - 1]
            out.append(str(doc_lines.index(text) + 1) if text in doc_lines else "")
        return out

    def _key_lines(self, world: CaseWorld, lines: list[str]) -> dict[str, str]:
        rows, key = world.pred.params["rows"], world.pred.params["key"]
        if world.mode == "lookup":
            return {r[key].strip().lower(): lines[i] for i, r in enumerate(rows)}
        return {w: lines[next(i for i, r in enumerate(rows) if r[key] == v)] for w, v in world.mapping.items()}

    def _stale(self, world: CaseWorld) -> str:
        rows = world.pred.params["rows"]
        key, value = world.pred.params["key"], world.pred.params["value"]
        vals = [r[value] for r in rows]
        shifted = vals[1:] + vals[:1]
        return ("# Reference (old)\n\nSuperseded; kept for history only.\n\n"
                + "".join(f"- {r[key]}: {v}\n" for r, v in zip(rows, shifted, strict=True)))

    def _metrics(self, world: CaseWorld, expected: dict, dependent: bool) -> list[Metric]:
        pid = [world.pred.id]
        out = [Metric("answers_exact", "Share of in-scope cases whose answer is exactly right (extra, repeated or "
                      "out-of-scope cases count against).",
                      'return exact_rate(EXPECTED["answers"], out["rows"])', ("exact_rate",), pid),
               Metric("every_answer", "Mean over the table's answers of the Jaccard of the cases given that answer "
                      "(each row of the table must be used), times the share of reported lines that are distinct "
                      "in-scope cases (listing every case under every answer, or invented cases, earn nothing).",
                      'scores = []\nfor a in sorted(set(EXPECTED["answers"].values())):\n'
                      '    want = [[c] for c, v in EXPECTED["answers"].items() if v == a]\n'
                      '    got = [[c] for c, v in out["rows"] if v == a]\n'
                      '    scores.append(jaccard(want, got))\n'
                      'return sum(scores) / len(scores) * ' + PRECISION,
                      ("jaccard", "precision"), pid)]
        if len(expected["unknown"]) >= 1 and len(expected["answers"]) - len(expected["unknown"]) >= 2:
            out.append(Metric("unknown_cases", "Jaccard of the cases answered unknown (near misses and notes without "
                              "a signal word must not be guessed), times the share of reported lines that are "
                              "distinct in-scope cases.",
                              'return jaccard([[c] for c in EXPECTED["unknown"]], '
                              '[[c] for c, v in out["rows"] if v == "unknown"]) * ' + PRECISION,
                              ("jaccard", "precision"), pid))
        if expected["closed"]:
            out.append(Metric("closed_cases_left_out", "Share of the cases out of scope (not open) left unanswered, "
                              "weighted by answers_exact.",
                              'listed = {c for c, _ in out["rows"]}\n'
                              'gone = sum(c not in listed for c in EXPECTED["closed"]) / len(EXPECTED["closed"])\n'
                              'return gone * metric_answers_exact(out)', (), pid))
        if self.evidence:
            out.append(Metric("cited_rows", "Jaccard of (case, answer, line) triples: each answer must cite the "
                              "line of the reference table row that decides it.",
                              'return jaccard(EXPECTED["cited"], out["cited"])', ("jaccard",), pid))
        if dependent:
            out.append(Metric("counts", "counts.json gives the number of cases per answer exactly, agreeing with "
                              "the answers file.",
                              'got = out["counts"]\nif not isinstance(got, dict):\n    return 0.0\n'
                              'listed = Counter(v for _, v in out["rows"])\n'
                              'return exact_rate(EXPECTED["counts"], [(k, v) for k, v in got.items() '
                              'if listed.get(k) == v])', ("exact_rate",), pid))
        return out

    def _slots(self, inp: ShapeInput, world: CaseWorld, answer_col: str, split: bool) -> Slots:
        name = f"“{world.pred.subject}”"
        params = world.pred.params
        example = params["rows"][0][params["value" if world.mode == "lookup" else "key"]]
        if world.mode == "classify":
            how = (f"Each line is a short note; give it the {world.key_col} whose {world.input_col} it contains as "
                   "a whole word (letter case does not matter), or `unknown` when it contains none.")
        else:
            how = (f"Each line names {with_article(world.key_col)}; give its {world.answer_col}, matching exactly "
                   "but ignoring letter case and surrounding spaces, or `unknown` when it is not listed.")
        head = f"case<TAB>{answer_col}" + ("<TAB>line" if self.evidence else "")
        sem = [how, f"Write a tab-separated file with the header `{head}`, one line per entry, in any order"
               + (f"; line is the line number (from 1) in {DOC} of the row that decides, empty for unknown."
                  if self.evidence else ".")]
        if world.scoped:
            sem.append("Only open ones are answered; closed ones are left out.")
        if inp.has("dependent"):
            sem.append(f"Then write {COUNTS} mapping each answer to how often it was given.")
        if inp.has("distractor"):
            sem.append(f"Only {DOC} is in force.")
        return Slots(
            topic=f"the {inp.topic} batch",
            situation=f"We decide these with {name} and want the batch done consistently.",
            inputs=f"The batch is in {CASES}" + (f", and {STATUS} says which are open." if split else "."),
            guidance=f"{name} is copied into {DOC}.",
            ask=f"decide every entry of the batch with {name}",
            semantics=sem, deliverable=f"Put the answers in {OUT}.", constraints=["Leave the input as it is."],
            hint="The file is tab-separated; Python's csv module with delimiter '\\t' reads it.",
            example=f"C999<TAB>{example}",
            outputs=[OUT, COUNTS, "/app/out"])

    def _rubric(self, inp: ShapeInput, world: CaseWorld) -> RubricSpec:
        p = world.pred
        must = [Bullet(f"Give every open entry its exact {world.answer_col} from {p.subject!r} in {OUT}",
                       "metric:answers_exact"),
                Bullet("Answer unknown for near-miss keys and notes it does not cover", "metric:answers_exact")]
        avoid = pitfall_bullets(inp.knowledge, [p], 2)
        avoid.append(Bullet(f"Guessing the closest entry of {p.subject!r} for anything it does not list",
                            p.source.label))
        rows = p.params["rows"][:4]
        cols = p.params["columns"]
        sample = "; ".join(" / ".join(f"{c}: {v}" for c, v in zip(cols, r, strict=False)) for r in rows)
        practice = [Bullet(f"Decide from {p.subject!r} as written ({sample[:200]})", p.source.label)]
        if world.mode == "classify":
            practice.append(Bullet(f"Match the {world.input_col} as listed, whole words only", p.source.label))
        return RubricSpec(must, avoid, practice)

    def _cheats(self, world: CaseWorld, answer_col: str) -> dict[str, str]:
        head = f"case\t{answer_col}" + ("\tline" if self.evidence else "")
        ids = sorted(c.id for c in world.cases)
        common = Counter(world.expected().values()).most_common(1)[0][0]
        first = world.pred.params["rows"][0][world.pred.params["value" if world.mode == "lookup" else "key"]]
        return {
            "most_common_answer.sh": cheats.rows(OUT, head, [f"{i}\t{common}" for i in ids]),
            "first_row_answer.sh": cheats.rows(OUT, head, [f"{i}\t{first}" for i in ids]),
            "all_unknown.sh": cheats.rows(OUT, head, [f"{i}\t{UNKNOWN}" for i in ids]),
            "echo_input.sh": cheats.raw(f"mkdir -p /app/out\ncp {CASES} {OUT}\n"),
            "header_only.sh": cheats.header_only(OUT, head),
        }

    def _challenges(self, inp: ShapeInput, world: CaseWorld) -> list[Challenge]:
        text = {
            "split_sources": ("which cases are open is in status.tsv, not in the cases file", ["answers_exact"]),
            "distractor": ("an old, superseded copy of the table maps keys to other values", ["answers_exact"]),
            "dependent": ("counts.json must be computed from the answers", ["counts"]),
            "precondition": ("closed cases are out of scope", ["answers_exact"]),
            "boundary": ("near-miss keys and notes without a signal word are unknown", ["unknown_cases"]),
            "rule_in_docs": ("the mapping is only in the quoted table", ["every_answer"]),
        }
        return [Challenge(pattern="", dimension="", effect=e, instantiation=text[e][0], tested_by=text[e][1])
                for e in inp.effects if e in text]


class TableEvidence(TableCases):
    """investigate_synthesize / evidence_traceability: the same cases, each answer citing the table row's line."""

    evidence = True
    name = "table_evidence"
    archetype = "investigate_synthesize"
    verifier = "evidence_traceability"
    effects = frozenset({"split_sources", "distractor", "precondition", "boundary", "rule_in_docs"})
