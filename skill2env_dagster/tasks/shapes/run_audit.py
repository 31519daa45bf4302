"""audit_report / protocol_conformance (ordered procedures) and audit_report / exact_state (checklists): audit run
logs against the skill's own procedure and report, per run, whether it followed it and where it broke.

The procedure's steps, their order and which of them are optional are the skill's, quoted verbatim in /app/docs;
retried steps, skipped optional steps, dry runs and truncated logs are where a naive reading fails.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import replace
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.models.labels import to_label
from skill2env_dagster.tasks.compose.docs import notes_doc
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, pitfall_bullets
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric
from skill2env_dagster.tasks.worlds.runs import Run, RunWorld, build

RUNS = "/app/attempts"
INDEX = f"{RUNS}/index.csv"
STALE = "/app/docs/procedure-v1.md"
OUT = "/app/out/run_audit.csv"
SUMMARY = "/app/out/run_summary.json"
HEADER = "attempt,outcome,part"
SUMMARY_BODY = """got = out["summary"]
if not isinstance(got, dict):
    return 0.0
listed = Counter(r[1] for r in out["rows"])
return exact_rate(EXPECTED["counts"], [(k, v) for k, v in got.items() if listed.get(k) == v])"""
STRATA = {"retries_accepted": "runs with a step logged twice in a row", "optional_skips": "runs that skipped only "
          "optional steps", "late_repeats": "runs that redid an earlier step after later ones"}
STRATUM_KINDS = {"retries_accepted": ("retry", "retry_out_of_order"), "optional_skips": ("optional_skip",),
                 "late_repeats": ("late_repeat",)}

# Per-verdict metrics are blind to lines of other verdicts or invented runs: scaled by the checkpy helper.
RUN_PRECISION = 'precision([r[0] for r in out["rows"]], [r[0] for r in EXPECTED["rows"]])'

LOADER = '''
def load():
    rows = read_table(OUT, ["attempt", "outcome", "part"])
    if rows is None:
        return None
    rows = [r + ("",) * (3 - len(r)) for r in rows]
    return {"rows": [r[:3] for r in rows], "summary": read_json(SUMMARY)}
'''


def doc_path(pred: Predicate) -> str:
    """The procedure's doc, named after it (its own words, not a generic file name)."""
    return f"/app/docs/{to_label(pred.subject, 'steps')[:40]}.md"


def _log(world: RunWorld, run: Run, split: bool, start: dt.datetime) -> str:
    t = start
    head = [] if split else [f"# {run.id} operator={run.operator} mode={run.mode}"]
    lines = [*head, f"{t:%Y-%m-%dT%H:%M:%SZ} started"]
    for s in run.steps:
        t += dt.timedelta(minutes=3 + (s * 7) % 11)
        lines.append(f"{t:%Y-%m-%dT%H:%M:%SZ} done: {world.labels[s - 1]}")
    if run.truncated:
        last = lines.pop()
        lines.append(last[: max(24, len(last) // 2)])
        return "\n".join(lines)  # no closing line, no final newline: the log was cut off
    t += dt.timedelta(minutes=2)
    lines.append(f"{t:%Y-%m-%dT%H:%M:%SZ} finished")
    return "\n".join(lines) + "\n"


SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)
labels = {l: i + 1 for i, l in enumerate(SPEC["labels"])}
required = [i + 1 for i, o in enumerate(SPEC["optional"]) if not o]
meta = {}
if SPEC["index"]:
    lines = pathlib.Path(SPEC["index"]).read_text().splitlines()
    head = lines[0].split(",")
    for ln in lines[1:]:
        row = dict(zip(head, ln.split(",")))
        meta[row["attempt"]] = row


def judge(path):
    text = pathlib.Path(path).read_text()
    rid = pathlib.Path(path).stem
    lines = text.splitlines()
    info = dict(meta.get(rid, {}))
    if lines and lines[0].startswith("#"):
        info.update(dict(kv.split("=", 1) for kv in lines[0].split()[2:]))
    if SPEC["scoped"] and info.get("mode", "live") != "live":
        return None
    if not lines or not lines[-1].endswith(" finished"):
        return rid, "unreadable", ""
    steps = [labels[m.group(1)] for ln in lines if (m := re.match(r"\S+ done: (.*)$", ln))]
    missing = [s for s in required if s not in steps]
    if missing:
        return rid, "missing", str(missing[0])
    if SPEC["ordered"]:
        high = 0
        for s in steps:
            if s < high:
                return rid, "out_of_order", str(s)
            high = max(high, s)
    return rid, "ok", ""
'''

MAIN = '''
rows = [r for p in sorted(pathlib.Path(SPEC["dir"]).glob("a-*.txt")) if (r := judge(p))]
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("\\n".join(["attempt,outcome,part"] + [",".join(r) for r in rows]) + "\\n")
if SPEC["summary"]:
    from collections import Counter
    pathlib.Path(SPEC["summary"]).write_text(json.dumps(dict(Counter(v for _, v, _ in rows))))
'''

NAIVE = '''
# The naive reading: every listed step is required, any repeat is out of order, dry runs count.
required = list(range(1, len(SPEC["labels"]) + 1))
SPEC["scoped"] = False
_judge = judge


def judge(path):
    r = _judge(path)
    if r and r[1] == "ok" and SPEC["ordered"]:
        text = pathlib.Path(path).read_text()
        steps = [labels[m.group(1)] for ln in text.splitlines() if (m := re.match(r"\\S+ done: (.*)$", ln))]
        for a, b in zip(steps, steps[1:]):
            if b <= a:
                return r[0], "out_of_order", str(b)
    return r
'''


class RunAudit:
    name = "run_audit"
    archetype = "audit_report"
    verifier = "protocol_conformance"
    family = "procedure"
    kinds = frozenset({"order"})
    max_preds = 1
    effects = frozenset({"split_sources", "distractor", "dependent", "precondition", "corrupted", "boundary",
                         "rule_in_docs", "ordering", "multi_rule"})

    def design(self, inp: ShapeInput) -> Design:
        pred = inp.preds[0]
        ordered = pred.kind == "order"
        world = build(pred, 6 + 3 * inp.level, inp.rng("runs"), inp.vocabulary, ordered=ordered,
                      precondition=inp.has("precondition"), corrupted=inp.has("corrupted"))
        split = inp.has("split_sources")
        start = dt.datetime(2024, 3, 4, 8, 0) + dt.timedelta(days=inp.rng("date").randint(0, 300))
        files: dict[str, str | bytes] = {}
        for i, run in enumerate(world.runs):
            files[f"app/attempts/{run.id}.txt"] = _log(world, run, split, start + dt.timedelta(hours=5 * i))
        if split:
            files[INDEX.lstrip("/")] = "attempt,operator,mode\n" + "".join(
                f"{r.id},{r.operator},{r.mode}\n" for r in world.runs)
        doc = doc_path(pred)
        files[doc.lstrip("/")] = notes_doc(pred.subject, inp.text, [pred], self._intro(inp, world))
        if inp.has("distractor"):
            files[STALE.lstrip("/")] = self._stale(world)
        expected_map = world.expected()
        strata = {name: sorted(r.id for r in world.runs if r.kind in kinds and world.in_scope(r))
                  for name, kinds in STRATUM_KINDS.items()}
        expected = {"rows": sorted([rid, v, s] for rid, (v, s) in expected_map.items()),
                    "strata": {k: v for k, v in strata.items() if v},
                    "dry": sorted(r.id for r in world.runs if not world.in_scope(r)),
                    "counts": dict(Counter(v for v, _ in expected_map.values()))}
        metrics = self._metrics(world, expected, inp.has("dependent"))
        spec = {"labels": world.labels, "optional": world.optional, "ordered": ordered, "scoped": world.scoped,
                "index": INDEX if split else "", "dir": RUNS, "out": OUT,
                "summary": SUMMARY if inp.has("dependent") else ""}
        solver = SOLVER.replace("__SPEC__", repr(json.dumps(spec)))
        check = CheckScript(LOADER, metrics, {"SEP": '","', "OUT": repr(OUT), "SUMMARY": repr(SUMMARY)},
                            ("read_table", "read_json"))
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Audit {len(world.runs)} run logs against the playbook's {pred.subject!r} "
                      f"{'procedure' if ordered else 'checklist'} and report each run's verdict and breaking step.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=self._slots(inp, world, split, doc), check=check, expected=expected, rubric=self._rubric(inp, world),
            solve=solver_script(solver + MAIN), wrong=solver_script(solver + NAIVE + MAIN),
            cheats=self._cheats(world), complexity=Complexity(
                level=inp.sample.complexity, files_to_read=len(world.runs) + 1 + split,
                rules_in_play=len(world.labels), dependent_steps=1 + inp.has("dependent"), items=len(world.runs)),
            challenges=self._challenges(inp, world),
            facts=[f"{RUNS}/a-*.txt: {len(world.runs)} attempts, one completed part per line",
                   f"{doc}: the skill's procedure {pred.subject!r}, quoted"]
            + ([f"{INDEX}: operator and mode per run"] if split else []),
            boundary=InformationBoundary(
                stated=["where the logs and the quoted procedure are", "the verdict rules and output format"],
                discover=["the step order and which steps are optional (in the quoted procedure)"]
                + (["that dry runs are out of scope (procedure preamble)"] if world.scoped else [])),
            docs=[doc], deliverables=[OUT, *([SUMMARY] if inp.has("dependent") else [])],
        )

    def _intro(self, inp: ShapeInput, world: RunWorld) -> str:
        scope = (" Only live runs are audited; dry runs rehearse the procedure and are not reviewed."
                 if world.scoped else "")
        return (f"Quoted from our {inp.text.name} playbook; the step numbers are the playbook's order."
                + scope)

    def _stale(self, world: RunWorld) -> str:
        labels = list(world.labels)
        if len(labels) >= 3:
            labels[1], labels[2] = labels[2], labels[1]
        return ("# Procedure (v1, superseded)\n\nReplaced by procedure.md; kept for history only.\n\n"
                + "".join(f"{i + 1}. {lab}\n" for i, lab in enumerate(labels)))

    def _metrics(self, world: RunWorld, expected: dict, dependent: bool) -> list[Metric]:
        pid = [world.pred.id]
        out = [Metric("verdicts_exact", "Share of audited runs whose verdict is exactly right (a run listed twice or "
                      "not audited counts against).",
                      'return exact_rate({r[0]: r[1] for r in EXPECTED["rows"]}, [(r[0], r[1]) for r in out["rows"]])',
                      ("exact_rate",), pid)]
        for verdict, name in (("missing", "missing_steps"), ("out_of_order", "order_breaks")):
            if expected["counts"].get(verdict):
                out.append(Metric(name, f"Jaccard of (run, step) over the runs judged {verdict}, times the share "
                                  "of reported lines that are distinct audited runs.",
                                  f'return jaccard([(r[0], r[2]) for r in EXPECTED["rows"] if r[1] == {verdict!r}],\n'
                                  f'               [(r[0], r[2]) for r in out["rows"] if r[1] == {verdict!r}])'
                                  f' * {RUN_PRECISION}', ("jaccard", "precision"), pid))
        for name in expected["strata"]:
            out.append(Metric(name, f"Share of {STRATA[name]} judged exactly (verdict and step), weighted by "
                              "verdicts_exact.",
                              f'keep = set(EXPECTED["strata"][{name!r}])\n'
                              'want = {r[0]: r for r in EXPECTED["rows"] if r[0] in keep}\n'
                              'got = {r[0]: r for r in out["rows"] if r[0] in keep}\n'
                              'right = sum(got.get(k) == tuple(v) for k, v in want.items()) / len(keep)\n'
                              'return right * metric_verdicts_exact(out)', (), pid, optional=True))
        if expected["dry"]:
            out.append(Metric("dry_runs_excluded", "Share of dry runs left out of the audit, weighted by "
                              "verdicts_exact.", 'listed = {r[0] for r in out["rows"]}\n'
                              'gone = sum(r not in listed for r in EXPECTED["dry"]) / len(EXPECTED["dry"])\n'
                              'return gone * metric_verdicts_exact(out)', (), pid))
        if "unreadable" in expected["counts"]:
            out.append(Metric("unreadable_logs", "Jaccard of the runs reported unreadable against the truncated "
                              "logs, times the share of reported lines that are distinct audited runs.",
                              'return jaccard([[r[0]] for r in EXPECTED["rows"] if r[1] == "unreadable"],\n'
                              '               [[r[0]] for r in out["rows"] if r[1] == "unreadable"])'
                              f' * {RUN_PRECISION}', ("jaccard", "precision")))
        if dependent:
            out.append(Metric("summary", "run_summary.json counts the runs per verdict exactly, in agreement with "
                              "the audit file.", SUMMARY_BODY, ("exact_rate",)))
        return out

    def _slots(self, inp: ShapeInput, world: RunWorld, split: bool, doc: str) -> Slots:
        name = f"“{world.pred.subject}”"
        if world.ordered:
            rule = ("`missing` with the lowest number of a required part it never reached, `out_of_order` with the "
                    "number of the first part done after a later one, else `ok` with the last column empty")
        else:
            rule = ("`missing` with the lowest number of a required item it never shows, else `ok` with the last "
                    "column empty; order does not matter")
        sem = [f"Write one entry per attempt under the header `{HEADER}`, in any order: {rule}.",
               "The same part twice in a row counts once."]
        if any(r.truncated for r in world.runs):
            sem.append("A file cut off before its closing entry is `unreadable`.")
        if inp.has("dependent"):
            sem.append(f"Then write {SUMMARY} with the number of attempts per outcome.")
        if inp.has("distractor"):
            sem.append(f"Only {doc} is in force.")
        return Slots(
            topic=f"the {inp.topic} review of last month's work",
            situation=f"We work through {name} for this, and a few attempts went wrong somewhere.",
            inputs=f"Each .txt file in {RUNS} is one attempt, each completed part on its own line"
                   + (f", and {INDEX} says who did it and in which mode." if split else "."),
            guidance=f"The parts are written down, numbered, in {doc}.",
            ask=f"check every attempt in {RUNS} against {name} and tell me which ones went wrong and where",
            semantics=sem, deliverable=f"Put the result in {OUT}.",
            constraints=["Do not edit the attempt files."],
            hint="After the timestamp, each entry reads `done: <name>`.",
            example="a-999,missing,2", outputs=[OUT, SUMMARY, "/app/out"])

    def _rubric(self, inp: ShapeInput, world: RunWorld) -> RubricSpec:
        p = world.pred
        must = [Bullet(f"Give every attempt its exact outcome and number in {OUT}", "metric:verdicts_exact"),
                Bullet(f"Count a part repeated in a row once, and accept what {p.subject!r} marks optional",
                       "metric:verdicts_exact")]
        if inp.has("dependent"):
            must.append(Bullet(f"Count the outcomes in {SUMMARY} from the same audit", "metric:summary"))
        avoid = pitfall_bullets(inp.knowledge, [p], 2)
        avoid.append(Bullet(f"Flagging an attempt for skipping what {p.subject!r} marks as optional", p.source.label))
        optional = [lab for lab, o in zip(world.labels, world.optional, strict=False) if o]
        steps = "; ".join(f"{i + 1}. {lab}" for i, lab in enumerate(world.labels))
        practice = [Bullet(f"Follow {p.subject!r} in its own order ({steps[:190]})",
                           p.source.label)]
        if optional:
            practice.append(Bullet(f"Read the wording for {', '.join(optional)[:120]}: it is optional, "
                                   "so its absence is fine", p.source.label))
        details = p.params.get("details") or []
        if details:  # the step the playbook explains most, beyond its short name
            i = max(range(len(details)), key=lambda j: len(details[j]) - len(world.labels[j]))
            practice.append(Bullet(f"Read part {i + 1} as the playbook explains it: \"{details[i][:170]}\"",
                                   p.source.label))
        return RubricSpec(must, avoid, practice)

    def _cheats(self, world: RunWorld) -> dict[str, str]:
        ids = sorted(r.id for r in world.runs)
        return {
            "all_ok.sh": cheats.rows(OUT, HEADER, [f"{r},ok," for r in ids]),
            "all_missing_first.sh": cheats.rows(OUT, HEADER, [f"{r},missing,1" for r in ids]),
            "every_verdict.sh": cheats.rows(OUT, HEADER, [f"{r},{v},{s}" for r in ids for v, s in
                                                            (("ok", ""), ("missing", "1"),
                                                             ("out_of_order", "2"))]),
            "header_only.sh": cheats.header_only(OUT, HEADER),
            "example_only.sh": cheats.rows(OUT, HEADER, ["a-999,missing,2"]),
        }

    def _challenges(self, inp: ShapeInput, world: RunWorld) -> list[Challenge]:
        text = {
            "split_sources": ("operator and mode are in attempts/index.csv, not in the attempt files",
                              ["verdicts_exact"]),
            "distractor": ("a superseded v1 of the procedure with two steps swapped sits next to the current one",
                           ["order_breaks"]),
            "dependent": ("run_summary.json must count the verdicts of the audit", ["summary"]),
            "precondition": ("dry runs break the procedure but are out of scope", ["dry_runs_excluded"]),
            "corrupted": ("a truncated log must be reported unreadable", ["unreadable_logs"]),
            "boundary": ("optional steps and retries are compliant; a late repeat is not",
                         ["retries_accepted", "optional_skips", "late_repeats"]),
            "rule_in_docs": ("the step order and optional steps are only in the quoted procedure",
                             ["missing_steps"]),
            "ordering": ("the procedure's order decides which runs are out of order", ["order_breaks"]),
            "multi_rule": ("both missing and out-of-order runs must be told apart", ["missing_steps", "order_breaks"]),
        }
        return [Challenge(pattern="", dimension="", effect=e, instantiation=text[e][0], tested_by=text[e][1])
                for e in inp.effects if e in text]


class ChecklistAudit(RunAudit):
    """The same world for an unordered checklist: every required item must appear, order is free."""

    name = "checklist_audit"
    verifier = "exact_state"
    family = "checklist"
    kinds = frozenset({"coverage"})
    effects = frozenset({"split_sources", "dependent", "precondition", "corrupted", "boundary", "rule_in_docs",
                         "multi_rule"})

    def design(self, inp: ShapeInput) -> Design:
        """A checklist whose items are all required and unordered leaves the naive reading nothing to get wrong:
        such a world always has dry runs that are out of scope (the precondition), so reading the checklist's
        scope is part of the method."""
        optional = inp.preds[0].params.get("optional") or []
        if not any(optional) and not inp.has("precondition"):
            inp = replace(inp, effects=[*inp.effects, "precondition"])
        return super().design(inp)


NEXT = "/app/out/next_steps.csv"
RESUME_LOADER = '''
def load():
    rows = read_table(OUT, ["attempt", "next"])
    if rows is None:
        return None
    return [(r[0], r[1] if len(r) > 1 else "") for r in rows]
'''
RESUME_SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)
labels = {l: i + 1 for i, l in enumerate(SPEC["labels"])}
required = [i + 1 for i, o in enumerate(SPEC["optional"]) if not o]
rows = []
for path in sorted(pathlib.Path(SPEC["dir"]).glob("a-*.txt")):
    text = path.read_text()
    if SPEC["scoped"] and "mode=dry-run" in text.splitlines()[0]:
        continue
    steps = [labels[m.group(1)] for ln in text.splitlines() if (m := re.match(r"\S+ done: (.*)$", ln))]
    left = [s for s in required if s not in steps]
    rows.append((path.stem, str(left[0]) if left else "done"))
'''
RESUME_NAIVE = '''
# The naive plan: the step after the last one logged, optional or not.
rows = []
for path in sorted(pathlib.Path(SPEC["dir"]).glob("a-*.txt")):
    steps = [labels[m.group(1)] for ln in path.read_text().splitlines() if (m := re.match(r"\\S+ done: (.*)$", ln))]
    nxt = (max(steps) + 1) if steps else 1
    rows.append((path.stem, str(nxt) if nxt <= len(SPEC["labels"]) else "done"))
'''
RESUME_MAIN = '''
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("\\n".join(["attempt,next"] + [",".join(r) for r in rows]) + "\\n")
'''


class RunResume:
    """plan_decide / exact_state: in-progress runs of the skill's procedure; plan each run's next step."""

    name = "run_resume"
    archetype = "plan_decide"
    verifier = "exact_state"
    family = "procedure"
    kinds = frozenset({"order"})
    max_preds = 1
    effects = frozenset({"boundary", "rule_in_docs", "ordering", "dependent", "multi_rule", "precondition"})

    def design(self, inp: ShapeInput) -> Design:
        from skill2env_dagster.tasks.worlds.runs import add_dry_runs, build_partial, next_step

        pred = inp.preds[0]
        world, runs = build_partial(pred, 7 + 3 * inp.level, inp.rng("resume"))
        scoped = inp.has("precondition")  # dry runs among the attempts: never resumed (the procedure's preamble)
        dry = add_dry_runs(world, runs, inp.rng("dry")) if scoped else []
        start = dt.datetime(2024, 5, 6, 8, 0) + dt.timedelta(days=inp.rng("date").randint(0, 200))
        files: dict[str, str | bytes] = {}
        for i, r in enumerate(runs):
            t = start + dt.timedelta(hours=3 * i)
            head = [f"# {r.id} mode={'dry-run' if r.id in dry else 'live'}"] if scoped else []
            lines = [*head, f"{t:%Y-%m-%dT%H:%M:%SZ} started"]
            for s in r.steps:
                t += dt.timedelta(minutes=4 + s % 7)
                lines.append(f"{t:%Y-%m-%dT%H:%M:%SZ} done: {world.labels[s - 1]}")
            files[f"app/attempts/{r.id}.txt"] = "\n".join(lines) + "\n"
        doc = doc_path(pred)
        files[doc.lstrip("/")] = notes_doc(pred.subject, inp.text, [pred],
                                           f"Quoted from our {inp.text.name} playbook; the step numbers are the "
                                           "playbook's order." + (" Dry runs only rehearse the procedure: they are "
                                                                  "never resumed and get no plan." if scoped else ""))
        answers = {r.id: next_step(world, r.steps) for r in runs if r.id not in dry}
        groups = {"skipped_required": "skipped_earlier", "optional_ahead": "optional_next", "retried_steps": "retry"}
        strata = {name: sorted(r.id for r in runs if r.kind == kind) for name, kind in groups.items()}
        expected: dict[str, Any] = {"answers": answers, "strata": {k: v for k, v in strata.items() if v},
                                    "dry": dry}
        spec = {"labels": world.labels, "optional": world.optional, "dir": RUNS, "out": NEXT, "scoped": scoped}
        solver = RESUME_SOLVER.replace("__SPEC__", repr(json.dumps(spec)))
        metrics = [Metric("next_exact", "Share of runs whose next step (or done) is exactly right.",
                          'return exact_rate(EXPECTED["answers"], out)', ("exact_rate",), [pred.id])]
        for name in expected["strata"]:
            metrics.append(Metric(name, f"Share of the {name.replace('_', ' ')} runs planned exactly, weighted by "
                                  "next_exact.",
                                  f'keep = EXPECTED["strata"][{name!r}]\ngot = dict(out)\n'
                                  'right = sum(got.get(r) == EXPECTED["answers"][r] for r in keep) / len(keep)\n'
                                  'return right * metric_next_exact(out)', (), [pred.id]))
        metrics.append(Metric("finished_runs", "Jaccard of the runs reported done against the runs with every "
                              "required step completed, times the share of reported lines that are distinct runs.",
                              'return jaccard([[r] for r, n in EXPECTED["answers"].items() if n == "done"],\n'
                              '               [[r] for r, n in out if n == "done"])'
                              ' * precision([r for r, _ in out], EXPECTED["answers"])', ("jaccard", "precision"),
                              [pred.id]))
        if dry:
            metrics.append(Metric("dry_runs_left_out", "Share of dry runs given no plan, weighted by next_exact.",
                                  'listed = {r for r, _ in out}\n'
                                  'gone = sum(r not in listed for r in EXPECTED["dry"]) / len(EXPECTED["dry"])\n'
                                  'return gone * metric_next_exact(out)', (), [pred.id]))
        check = CheckScript(RESUME_LOADER, metrics, {"SEP": '","', "OUT": repr(NEXT)}, ("read_table",))
        ids = sorted(answers)
        optional = [lab for lab, o in zip(world.labels, world.optional, strict=False) if o]
        slots = Slots(
            topic=f"the {inp.topic} hand-over",
            situation="Several attempts were interrupted at shift change, and whoever picks them up needs to "
                      "know where to continue.",
            inputs=f"Each .txt file in {RUNS} is one unfinished attempt, each completed part on its own line.",
            guidance=f"The parts are written down, numbered, in {doc}.",
            ask=f"work out, for every attempt in {RUNS}, what of “{pred.subject}” has to be done next",
            semantics=["Next is the lowest number among the required ones not completed yet, even if a later one "
                       "was already done; the ones marked optional are never required, and an attempt with all "
                       "required ones done gets `done`.",
                       f"Write one entry per attempt{' to resume' if scoped else ''} under the header "
                       "`attempt,next`, with the number or `done`."],
            deliverable=f"Put the plan in {NEXT}.", constraints=["Do not edit the attempt files."],
            hint="Match each entry's text after `done: ` to the numbered parts.",
            example="a-999,3", outputs=[NEXT, "/app/out"])
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Plan the next step of {len(runs)} interrupted runs of the playbook's {pred.subject!r} "
                      "procedure.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"], slots=slots, check=check,
            expected=expected,
            rubric=RubricSpec(
                [Bullet(f"Give every attempt its exact next required number, or done, in {NEXT}", "metric:next_exact"),
                 Bullet("Go back to a required part an attempt skipped, even after later ones", "metric:next_exact")],
                [*pitfall_bullets(inp.knowledge, [pred], 2),
                 Bullet("Planning an optional part as the next required one", pred.source.label)],
                [Bullet(f"Follow the {pred.subject!r} order: "
                        + "; ".join(f"{i + 1}. {lab}" for i, lab in enumerate(world.labels))[:170], pred.source.label)]
                + ([Bullet(f"Read the wording for {', '.join(optional)[:100]}: optional, never required",
                           pred.source.label)] if optional else [])),
            solve=solver_script(solver + RESUME_MAIN), wrong=solver_script(solver + RESUME_NAIVE + RESUME_MAIN),
            cheats={"all_first_step.sh": cheats.rows(NEXT, "attempt,next", [f"{r},1" for r in ids]),
                    "all_done.sh": cheats.rows(NEXT, "attempt,next", [f"{r},done" for r in ids]),
                    "header_only.sh": cheats.header_only(NEXT, "attempt,next"),
                    "example_only.sh": cheats.rows(NEXT, "attempt,next", ["a-999,3"])},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=len(runs) + 1,
                                  rules_in_play=len(world.labels), dependent_steps=2, items=len(runs)),
            challenges=[Challenge(pattern="", dimension="", effect=e, instantiation=t,
                                  tested_by=list(expected["strata"]) or ["next_exact"])
                        for e, t in {"boundary": "optional steps are never next; a retry is not progress",
                                     "rule_in_docs": "the order and the optional steps are only in the procedure",
                                     "ordering": "a required step skipped earlier comes before later ones",
                                     "dependent": "each run's plan depends on what its log already holds",
                                     "multi_rule": "runs stand at different points of the procedure",
                                     "precondition": "dry runs, marked in each log's first line, are never "
                                                     "resumed"}.items()
                        if e in inp.effects],
            facts=[f"{RUNS}/a-*.txt: {len(runs)} unfinished attempts", f"{doc}: the procedure, quoted"],
            boundary=InformationBoundary(stated=["where the logs and the procedure are", "what 'next' means"],
                                         discover=["the step order and which steps are optional"]
                                         + (["that dry runs are never resumed (procedure preamble)"] if scoped
                                            else [])),
            docs=[doc], deliverables=[NEXT],
        )
