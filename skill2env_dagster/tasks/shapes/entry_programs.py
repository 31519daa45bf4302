"""Program deliverables built on the skill's entry rules, graded on hidden inputs the solver never sees:

- entry_checker (build_to_spec / regression_suite): write a checker that prints every breach of a register;
- checker_repair (repair_debug / regression_suite): a shipped checker crashes on every input and, once that is
  fixed, still misapplies the rules (substring tokens, off-by-one limits, ignored exceptions…);
- token_scanner (harden_secure / adversarial_corpus): a scanner for the skill's forbidden tokens over source trees
  full of near misses.

Echoing the visible sample, printing every pair, or printing nothing earns nothing on the hidden inputs.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.docs import notes_doc
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, exception_bullet, pitfall_bullets, rule_bullet
from skill2env_dagster.tasks.predicates.entry_rules import violation
from skill2env_dagster.tasks.predicates.entry_values import Role, Words, code_line, token_value
from skill2env_dagster.tasks.shapes.base import Design, ShapeError, ShapeInput
from skill2env_dagster.tasks.shapes.entry_audit import ENTRY_KINDS, how
from skill2env_dagster.tasks.shapes.entry_files import (
    NAIVE,
    NOTES,
    SOLVER,
    csv_text,
    edge_ids,
    hidden_worlds,
    make_world,
    notes,
    single_layout,
    spec,
)
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric
from skill2env_dagster.tasks.worlds.entries import EntryWorld

TOOL = "/app/bin/check-register"
SAMPLE = "/app/samples/register.csv"
SAMPLE_OUT = "/app/samples/findings.txt"
HIDDEN = "/tests/hidden"

SCAN_ROLES: list[Role] = ["breach", "near_miss", "comply"]

CHECKER_LOADER = '''
def load():
    results = {}
    for name in EXPECTED["inputs"]:
        lines = run_tool([TOOL, HIDDEN + "/" + name])
        results[name] = None if lines is None else [
            tuple(c.strip() for c in (ln.split(",") + ["", "", ""])[:3]) for ln in lines]
    return results if any(v is not None for v in results.values()) else None


def per_input(score):
    vals = [score(EXPECTED["inputs"][n], out[n]) if out[n] is not None else 0.0 for n in EXPECTED["inputs"]]
    return sum(vals) / len(vals)
'''

CLI_MAIN = '''
import sys
SPEC["files"] = [sys.argv[1]]
SPEC["registry"] = ""
found, invalid = findings()
print("\\n".join([",".join(f) for f in found] + [i + ",INVALID," for i in invalid]))
'''


def _program(source: str) -> str:
    return "#!/usr/bin/env python3\n" + source.strip("\n") + "\n"


def install(path: str, program: str) -> str:
    """solve.sh that writes an executable program (the program itself reads its inputs at run time)."""
    return (f"#!/bin/bash\nset -euo pipefail\nmkdir -p {path.rsplit('/', 1)[0]}\ncat > {path} <<'PROGRAM_EOF'\n"
            f"{program}PROGRAM_EOF\nchmod +x {path}\n")


def _cli(world: EntryWorld, path: str = "input.csv") -> str:
    """The checker program: the entry solver reading the file named on its command line."""
    src = SOLVER.replace("__SPEC__", repr(json.dumps(spec(world, single_layout(world, path)))))
    return src + CLI_MAIN


def checker_metrics(world: EntryWorld, expected: dict, corrupted: bool) -> list[Metric]:
    ids = [p.id for p in world.preds]
    out = [
        Metric("hidden_breaches", "Mean over hidden registers of the Jaccard of (record, rule) pairs printed.",
               'return per_input(lambda want, got: jaccard([w[:2] for w in want["findings"]],\n'
               '                                           [g[:2] for g in got if g[1] != "INVALID"]))',
               ("jaccard",), ids),
        Metric("hidden_evidence", "Mean over hidden registers of the Jaccard of (record, rule, evidence) triples.",
               'return per_input(lambda want, got: jaccard(want["findings"], [g for g in got if g[1] != "INVALID"]))',
               ("jaccard",), ids),
    ]
    if all(len([f for f in v["findings"] if f[0] in set(v["edges"])]) >= 2 for v in expected["inputs"].values()):
        out.append(Metric("hidden_wording", "Mean Jaccard on the records where the rules' wording decides "
                          "(boundaries, near misses, exceptions, scope).",
                          'return per_input(lambda want, got: jaccard(\n'
                          '    [w[:2] for w in want["findings"] if w[0] in want["edges"]],\n'
                          '    [g[:2] for g in got if g[0] in want["edges"] and g[1] != "INVALID"]))',
                          ("jaccard",), ids))
    if corrupted:
        out.append(Metric("hidden_invalid", "Mean Jaccard of the records printed as INVALID against the malformed "
                          "rows.", 'return per_input(lambda want, got: jaccard([[i] for i in want["invalid"]],\n'
                          '                                           [g[:1] for g in got if g[1] == "INVALID"]))',
                          ("jaccard",)))
    return out


def _expected(worlds: list[EntryWorld]) -> dict:
    return {"inputs": {f"register-{i + 1}.csv": {"findings": [list(f) for f in w.findings()],
                                                  "invalid": w.invalid(), "edges": edge_ids(w)}
                       for i, w in enumerate(worlds)}}


def _hidden_files(worlds: list[EntryWorld]) -> dict[str, str]:
    return {f"hidden/register-{i + 1}.csv": csv_text(w, f"hidden/register-{i + 1}.csv") for i, w in enumerate(worlds)}


def _sample_files(world: EntryWorld) -> dict[str, str]:
    found = world.findings()
    lines = [",".join(f) for f in found] + [f"{i},INVALID," for i in world.invalid()]
    return {SAMPLE.lstrip("/"): csv_text(world, SAMPLE.lstrip("/")), SAMPLE_OUT.lstrip("/"): "\n".join(lines) + "\n"}


def _program_slots(inp: ShapeInput, world: EntryWorld, ask: str, situation: str, extra: list[str]) -> Slots:
    sem = [f"It is run as `{TOOL} FILE.csv` on registers like the sample (same columns, other records) and prints "
           "one line `id,rule,evidence` per breach, in any order, with no header; evidence is the measured number "
           "for a limit, the offending token, or the offending value for a format."]
    if any(p.kind.endswith("token") for p in world.preds):
        sem.append("A token only counts as a whole token, not as part of a longer name or flag.")
    if world.invalid():
        sem.append("A row that is missing a cell or whose number cannot be read is printed once as "
                   "`<id>,INVALID,` instead of being judged.")
    if world.scoped:
        sem.append("Records whose status is not active are not reviewed.")
    return Slots(
        topic=f"the {inp.topic} register checker", situation=situation,
        inputs=f"A sample register is in {SAMPLE}, with its correct findings in {SAMPLE_OUT}.",
        guidance=f"The rules are quoted in {NOTES}, each under an id (R1, R2, …).",
        ask=ask, semantics=sem + extra,
        deliverable="It will be judged only by running it on other registers, so it has to implement the rules, "
                    "not the sample.",
        constraints=["Any language available in the container is fine; keep the shebang and the exec bit."],
        hint="Python 3 and its csv module are available.", example="E999,R1,57", outputs=[TOOL, "/app/bin"])


def _rubric(inp: ShapeInput, world: EntryWorld, first: Bullet) -> RubricSpec:
    must = [first, Bullet("Print exact evidence and judge boundary values, near misses and exemptions as worded",
                          "metric:hidden_wording")]
    avoid = [exception_bullet(p, world.exempt[p.id]) for p in world.preds if world.exempt.get(p.id)][:1]
    avoid += pitfall_bullets(inp.knowledge, world.preds, 2 - len(avoid))
    avoid.append(Bullet("Hard-coding the sample's findings instead of implementing the rules",
                        "metric:hidden_breaches"))
    practice = [rule_bullet(p, how(p, world)) for p in world.preds[:3]]
    return RubricSpec(must, avoid, practice)


def _program_cheats(world: EntryWorld) -> dict[str, str]:
    sample = "\n".join(",".join(f) for f in world.findings())
    every = ("import csv, sys\nrows = list(csv.reader(open(sys.argv[1])))\nfor r in rows[1:]:\n"
             f"    for rule in {[p.id for p in world.preds]!r}:\n        print(r[0] + ',' + rule + ',0')")
    return {
        "echo_sample.sh": cheats.program(TOOL, f"cat <<'EOF'\n{sample}\nEOF"),
        "print_every_pair.sh": cheats.program(TOOL, every, "/usr/bin/env python3"),
        "print_nothing.sh": cheats.program(TOOL, "exit 0"),
        "cat_input.sh": cheats.program(TOOL, 'cat "$1"'),
    }


def _checker_design(shape: object, inp: ShapeInput, world: EntryWorld, worlds: list[EntryWorld],
                    files: dict[str, str | bytes], solve: str, wrong: str, slots: Slots, rubric: RubricSpec,
                    objective: str, challenges: dict[str, tuple[str, list[str]]]) -> Design:
    expected = _expected(worlds)
    metrics = checker_metrics(world, expected, bool(world.invalid()))
    check = CheckScript(CHECKER_LOADER, metrics, {"TOOL": repr(TOOL), "HIDDEN": repr(HIDDEN)}, ("run_tool",))
    return Design(
        # `shape` is typed as the Shape protocol, which does not declare the class attributes every shape sets.
        shape=shape.name, archetype=shape.archetype, verifier=shape.verifier,  # type: ignore[attr-defined]
        objective=objective, env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/bin"
                                                             + (" && chmod +x /app/bin/check-register"
                                                                if "app/bin/check-register" in files else "")],
        slots=slots, check=check, expected=expected, rubric=rubric, solve=solve, wrong=wrong,
        cheats=_program_cheats(world),
        complexity=Complexity(level=inp.sample.complexity, files_to_read=2 + ("app/bin/check-register" in files),
                              rules_in_play=len(world.preds), dependent_steps=2, items=len(world.entries)),
        challenges=[Challenge(pattern="", dimension="", effect=e, instantiation=t[0], tested_by=t[1])
                    for e, t in challenges.items() if e in inp.effects],
        facts=[f"{SAMPLE}: a sample register of {len(world.entries)} records", f"{SAMPLE_OUT}: its findings",
               f"{NOTES}: the playbook's rules, quoted", f"{len(worlds)} hidden registers in tests/ (not visible)"],
        boundary=InformationBoundary(stated=["the program's path, arguments and output format"],
                                     discover=["each rule's exact limit, token or format (in the notes)",
                                               "edge cases the sample does not show"]),
        docs=[NOTES], deliverables=[TOOL], hidden_tests=_hidden_files(worlds),
    )


_PROGRAM_EFFECTS = {
    "multi_rule": ("the program is run on hidden registers; only a general implementation passes",
                   ["hidden_breaches"]),
    "boundary": ("hidden registers hold boundary values and near-miss tokens", ["hidden_wording"]),
    "precondition": ("records that are not active must be skipped", ["hidden_wording"]),
    "corrupted": ("malformed rows must be printed as INVALID", ["hidden_invalid"]),
    "rule_in_docs": ("the rules are only in the quoted notes", ["hidden_breaches"]),
    "validator": ("the shipped checker misapplies the rules after its crash is fixed", ["hidden_wording"]),
}


class EntryChecker:
    name = "entry_checker"
    archetype = "build_to_spec"
    verifier = "regression_suite"
    family = "entries"
    kinds = ENTRY_KINDS
    effects = frozenset({"multi_rule", "boundary", "precondition", "corrupted", "rule_in_docs"})

    def design(self, inp: ShapeInput) -> Design:
        world = make_world(inp, teams=1)
        worlds = hidden_worlds(inp, 3 + inp.level // 2, world.columns)
        files: dict[str, str | bytes] = {NOTES.lstrip("/"): notes(inp, world), **_sample_files(world)}
        slots = _program_slots(inp, world, f"write {TOOL}, a checker that lists every breach of the rules in a "
                               "register file", "We want the review to run in CI on every new export instead of "
                               "by hand.", [])
        rubric = _rubric(inp, world, Bullet(f"Make {TOOL} print every breach of any register, exactly",
                                            "metric:hidden_breaches"))
        return _checker_design(self, inp, world, worlds, files, install(TOOL, _program(_cli(world))),
                               install(TOOL, _program(_cli(world).replace(CLI_MAIN, NAIVE + CLI_MAIN))), slots,
                               rubric, f"Write a checker for {len(world.preds)} of the playbook's rules, graded on "
                               f"{len(worlds)} hidden registers.", _PROGRAM_EFFECTS)


# Bugs a shipped checker can carry: (applies when, buggy text, correct text).
_CRASH = ('    return list(csv.reader(text.splitlines(), delimiter=SPEC["sep"]))',
          '    return list(csv.reader(text.splitlines(), delimiter=";"))')
_BUGS: list[tuple[str, str, str]] = [
    ("token", 'return re.search(r"(?<![\\w-])" + re.escape(token) + r"(?![\\w-])", text) is not None',
     "return token in text"),
    ("limit", 'ok = {"lt": n < lim, "le": n <= lim, "gt": n > lim, "ge": n >= lim}[c]',
     'ok = {"lt": n <= lim, "le": n < lim, "gt": n >= lim, "ge": n > lim}[c]'),
    ("exempt", 'if rule["exempt"] and rec.get("context", "") == rule["exempt"]:',
     'if rule["exempt"] and rec.get("context", "") == rule["exempt"].title():'),
    ("scope", 'if SPEC["scoped"] and rec.get("status", "active") != "active":',
     'if SPEC["scoped"] and rec.get("status", "active") == "retired":'),
    ("format", '    ok = re.fullmatch(FORMATS[rule["convention"]], value) is not None',
     '    ok = re.match(FORMATS[rule["convention"]], value, re.I) is not None'),
    ("date", '    if ok and rule["convention"] == "iso_date":', '    if ok and rule["convention"] == "iso-date":'),
]


def _applicable(world: EntryWorld) -> list[tuple[str, str, str]]:
    kinds = {p.kind for p in world.preds}
    conventions = {p.params.get("convention") for p in world.preds if p.kind == "format"}
    when = {"token": bool(kinds & {"forbid_token", "replace_token", "require_token"}), "limit": "limit" in kinds,
            "exempt": bool(world.exempt), "scope": world.scoped, "format": bool(conventions - {"iso_date"}),
            "date": "iso_date" in conventions}
    return [b for b in _BUGS if when[b[0]]]


def _bugs_show(program: str, worlds: list[EntryWorld]) -> bool:
    """Run our own generated checker (never the skill's code) on the hidden registers: do the planted semantic
    bugs change at least one printed line?"""
    with tempfile.TemporaryDirectory(prefix="s2e-bugs-") as tmp:
        tool = Path(tmp) / "check.py"
        tool.write_text(program)
        for w in worlds:
            data = Path(tmp) / "in.csv"
            data.write_text(csv_text(w, "in.csv"))
            done = subprocess.run([sys.executable, str(tool), str(data)], capture_output=True, text=True,
                                  timeout=30, check=False)
            want = {",".join(f) for f in w.findings()} | {f"{i},INVALID," for i in w.invalid()}
            if done.returncode != 0 or set(done.stdout.split()) != want:
                return True
    return False


def _patch(pairs: list[tuple[str, str]]) -> str:
    """solve.sh: exact-text repairs of the shipped checker (a person's edit, not a rewrite)."""
    body = "\n".join(f"text = text.replace({bad!r}, {good!r})" for bad, good in pairs)
    return ("#!/bin/bash\nset -euo pipefail\npython3 - <<'PATCH_EOF'\nimport pathlib\n"
            f"path = pathlib.Path({TOOL!r})\ntext = path.read_text()\n{body}\npath.write_text(text)\nPATCH_EOF\n"
            f"chmod +x {TOOL}\n")


class CheckerRepair:
    name = "checker_repair"
    archetype = "repair_debug"
    verifier = "regression_suite"
    family = "entries"
    kinds = ENTRY_KINDS
    effects = frozenset({"multi_rule", "boundary", "precondition", "corrupted", "rule_in_docs", "validator"})

    def design(self, inp: ShapeInput) -> Design:
        world = make_world(inp, teams=1)
        bugs = _applicable(world)
        if not bugs:
            raise ShapeError("no rule in play that a planted checker bug would change")
        worlds = hidden_worlds(inp, 3 + inp.level // 2, world.columns)
        good = _program(_cli(world))
        broken = good.replace(_CRASH[0], _CRASH[1])
        for _, right, bad in bugs:
            broken = broken.replace(right, bad)
        if broken.count("\n") != good.count("\n") or any(right in broken for _, right, _ in bugs):
            raise ShapeError("planted bugs did not apply to the checker text")
        if not _bugs_show(broken.replace(_CRASH[1], _CRASH[0]), worlds):
            raise ValueError("the planted bugs change no answer on the hidden registers")
        files: dict[str, str | bytes] = {NOTES.lstrip("/"): notes(inp, world), **_sample_files(world),
                                         "app/bin/check-register": broken}
        slots = _program_slots(inp, world, f"fix {TOOL} so that it applies the documented rules correctly",
                               f"Our checker {TOOL} stopped working on the new exports, and even before that its "
                               "numbers did not match the manual reviews.",
                               ["Keep its path and calling convention; it has to work on other registers too."])
        rubric = _rubric(inp, world, Bullet(f"Make {TOOL} run again and print exactly the breaches of any register",
                                            "metric:hidden_breaches"))
        fixes = [(_CRASH[1], _CRASH[0])] + [(bad, right) for _, right, bad in bugs]
        design = _checker_design(self, inp, world, worlds, files, _patch(fixes), _patch(fixes[:1]), slots, rubric,
                                 f"Repair a shipped checker (it crashes, then misapplies {len(bugs)} rule(s)), "
                                 f"graded on {len(worlds)} hidden registers.", _PROGRAM_EFFECTS)
        design.facts.append(f"{TOOL}: the broken checker ({len(bugs)} semantic bug(s) behind a crash)")
        design.boundary.discover.append("where the shipped checker goes wrong")
        design.complexity = design.complexity.model_copy(update={"dependent_steps": 2 + len(bugs)})
        return design


SCAN = "/app/bin/scan-tokens"
SCAN_LOADER = '''
def load():
    results = {}
    for name in EXPECTED["inputs"]:
        lines = run_tool([SCAN, HIDDEN + "/" + name])
        results[name] = None if lines is None else [tuple(ln.strip().rsplit(":", 2)) for ln in lines]
    return results if any(v is not None for v in results.values()) else None


def per_input(score):
    vals = [score(EXPECTED["inputs"][n], out[n]) if out[n] is not None else 0.0 for n in EXPECTED["inputs"]]
    return sum(vals) / len(vals)
'''

VENDOR = "vendor"
SCAN_SOLVER = r'''
import json, pathlib, re, sys

RULES = json.loads(__RULES__)
SKIP = json.loads(__SKIP__)  # top-level folders out of scope
root = pathlib.Path(sys.argv[1])
for path in sorted(p for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] not in SKIP):
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for rule in RULES:
            if re.search(r"(?<![\w-])" + re.escape(rule["token"]) + r"(?![\w-])", line):
                print(f"{path.relative_to(root)}:{n}:{rule['id']}")
'''


def _corpus(preds: list[Predicate], rng: random.Random, vocabulary: list[str], files: int,
            lines: int) -> tuple[dict[str, str], list[list[str]], list[list[str]]]:
    """Source files full of near misses: (files, expected [path, line, rule], near-miss [path, line])."""
    words = Words(vocabulary, rng)
    out: dict[str, str] = {}
    hits: list[list[str]] = []
    near: list[list[str]] = []
    exts = [".py", ".js", ".sql", ".sh", ".cfg"]
    for f in range(files):
        name = f"{words.pick()[0]}_{f + 1}{exts[f % len(exts)]}"
        body = []
        for n in range(1, lines + 1):
            p = rng.choice(preds)
            role = rng.choices(SCAN_ROLES, weights=[2, 3, 3])[0]
            v = token_value(p, role, words) or code_line(f"{words.pick()[0]}_{words.pick()[0]}", words)
            broken = [q.id for q in preds if violation(q, v) is not None]
            body.append(v)
            hits += [[name, str(n), rid] for rid in broken]
            if role == "near_miss" and not broken:
                near.append([name, str(n)])
        out[name] = "\n".join(body) + "\n"
    return out, hits, near


class TokenScanner:
    name = "token_scanner"
    archetype = "harden_secure"
    verifier = "adversarial_corpus"
    family = "entries"
    kinds = frozenset({"forbid_token", "replace_token"})
    effects = frozenset({"boundary", "multi_rule", "rule_in_docs", "split_sources", "precondition"})

    def design(self, inp: ShapeInput) -> Design:
        preds = inp.preds
        rng = inp.rng("corpus")
        visible, vis_hits, _ = _corpus(preds, rng, inp.vocabulary, 2 + inp.level, 12)
        hidden = [_corpus(preds, rng, inp.vocabulary, 3 + inp.level, 14) for _ in range(3)]
        if any(len(h[1]) < 3 or len(h[2]) < 2 for h in hidden):
            raise ShapeError("corpus: too few breaches or near misses")
        scoped = inp.has("precondition")  # vendored code breaks the rules too, but is never scanned
        if scoped:
            for tree in [visible, *(h[0] for h in hidden)]:
                vendored = _corpus(preds, rng, inp.vocabulary, 2 + inp.level, 14)[0]
                tree |= {f"{VENDOR}/{k}": v for k, v in vendored.items()}
        files: dict[str, str | bytes] = {f"app/src/{k}": v for k, v in visible.items()}
        scope = (f"Quoted from our {inp.text.name} playbook. The rule ids (R1, R2, …) are ours; the wording under "
                 f"each id is the playbook's own. Code under `{VENDOR}/` is third-party: it is never scanned, "
                 "whatever it contains." if scoped else "")
        files[NOTES.lstrip("/")] = notes_doc("Review notes", inp.text, preds, scope)
        hidden_files = {f"hidden/tree-{i + 1}/{k}": v for i, h in enumerate(hidden) for k, v in h[0].items()}
        expected = {"inputs": {f"tree-{i + 1}": {"hits": h[1], "near": h[2]} for i, h in enumerate(hidden)}}
        rules = [{"id": p.id, "token": p.params["token"]} for p in preds]
        program = "#!/usr/bin/env python3\n" + SCAN_SOLVER.replace("__RULES__", repr(json.dumps(rules))).replace(
            "__SKIP__", repr(json.dumps([VENDOR] if scoped else []))).strip() + "\n"
        naive = program.replace('r"(?<![\\w-])" + re.escape(rule["token"]) + r"(?![\\w-])"',
                                're.escape(rule["token"])')
        metrics = [
            Metric("breach_lines", "Mean over hidden trees of the Jaccard of (file, line, rule) reported.",
                   'return per_input(lambda want, got: jaccard(want["hits"], got))', ("jaccard",),
                   [p.id for p in preds]),
            Metric("near_misses_clean", "Mean over hidden trees of the share of near-miss lines left unreported, "
                   "weighted by that tree's breach score.",
                   'def score(want, got):\n    flagged = {(g[0], g[1]) for g in got if len(g) == 3}\n'
                   '    clean = sum(tuple(n) not in flagged for n in want["near"]) / len(want["near"])\n'
                   '    return clean * jaccard(want["hits"], got)\nreturn per_input(score)', ("jaccard",),
                   [p.id for p in preds]),
        ]
        check = CheckScript(SCAN_LOADER, metrics, {"SCAN": repr(SCAN), "HIDDEN": repr(HIDDEN)}, ("run_tool",))
        tokens = ", ".join(f"`{p.params['token']}`" for p in preds)
        slots = Slots(
            topic=f"the {inp.topic} token scanner",
            situation=f"Our guide bans some constructs ({tokens}) and we keep finding them in reviews too late.",
            inputs=f"Some source files to try it on are in /app/src; {len(vis_hits)} lines there break a rule.",
            guidance=f"The rules are quoted in {NOTES}, each under an id (R1, R2, …).",
            ask=f"write {SCAN}, a scanner that reports every line of a source tree that breaks those rules",
            semantics=[f"It is run as `{SCAN} DIR` and prints one line `relative/path:line:rule` per breach, with "
                       "line numbers from 1, in any order.",
                       "A token counts only as a whole token: a letter, digit, `_` or `-` right before or after it "
                       "makes it part of another name."],
            deliverable="It will be judged on other source trees, with many names that only look like the banned "
                        "ones.",
            constraints=["Any language available in the container is fine; keep the shebang and the exec bit."],
            hint="Python's re module with lookarounds handles the whole-token rule.",
            example="lib/util.py:12:R1", outputs=[SCAN, "/app/bin"])
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Write a scanner for {len(preds)} of the playbook's banned tokens, graded on hidden source "
                      "trees full of near misses.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/bin"], slots=slots, check=check,
            expected=expected,
            rubric=RubricSpec(
                [Bullet(f"Make {SCAN} report every whole-token breach as path:line:rule", "metric:breach_lines"),
                 Bullet("Leave names that merely contain a banned token unreported", "metric:near_misses_clean")],
                [*pitfall_bullets(inp.knowledge, preds, 2),
                 Bullet("Reporting substring matches inside longer identifiers", "metric:near_misses_clean")],
                [rule_bullet(p, f"to every line, matching `{p.params['token']}` as a whole token") for p in preds[:3]]),
            solve=install(SCAN, program), wrong=install(SCAN, naive),
            cheats={"print_nothing.sh": cheats.program(SCAN, "exit 0"),
                    "grep_substring.sh": cheats.program(SCAN, "cd \"$1\" && grep -rnF -e " + " -e ".join(
                        repr(p.params["token"]) for p in preds) + " . | sed 's|^./||' | cut -d: -f1,2 | "
                        "sed 's/$/:R1/'"),
                    "every_line.sh": cheats.program(SCAN, "cd \"$1\" && grep -rn '' . | sed 's|^./||' | "
                                                          "cut -d: -f1,2 | sed 's/$/:R1/'")},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=len(visible) + 1,
                                  rules_in_play=len(preds), dependent_steps=2, items=sum(len(h[0]) for h in hidden)),
            challenges=[Challenge(pattern="", dimension="", effect=e, instantiation=t, tested_by=["near_misses_clean"])
                        for e, t in {"boundary": "near-miss names dominate the hidden trees",
                                     "multi_rule": "several banned tokens, one rule id each",
                                     "rule_in_docs": "the banned tokens' exact spelling is in the quoted notes",
                                     "split_sources": "breaches spread over many files",
                                     "precondition": f"vendored code under {VENDOR}/ breaks the rules but is out "
                                                     "of scope (the notes' preamble)"}.items()
                        if e in inp.effects],
            facts=[f"/app/src: {len(visible)} sample source files", f"{NOTES}: the playbook's rules, quoted",
                   "3 hidden source trees in tests/ (not visible)"],
            boundary=InformationBoundary(stated=["the scanner's path, arguments, output and whole-token rule"],
                                         discover=["the banned tokens and their rule ids (in the notes)"]),
            docs=[NOTES], deliverables=[SCAN], hidden_tests=hidden_files,
        )
