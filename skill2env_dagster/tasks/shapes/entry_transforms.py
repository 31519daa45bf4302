"""Repairs of the skill's fixable rules — replaced tokens ("use `X` instead of `Y`") and naming/format conventions
(kebab-case, snake_case, ISO 8601 dates, semver…):

- entry_fix (edit_preserve / exact_state): fix the breaching values of a register in place, leaving every other
  byte alone (the skill's exceptions and out-of-scope records stay as they are);
- entry_normaliser (transform_convert / differential_equivalence): a program that does the same to any register,
  compared with our reference on hidden inputs;
- entry_normaliser_mr (transform_convert / metamorphic_invariants): the same program, also checked for the
  relations a correct normaliser keeps (idempotence, independence of row order), weighted by correctness.
"""

from __future__ import annotations

import json

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.grammar import with_article
from skill2env_dagster.tasks.compose.instruction import Slots, join_words
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, exception_bullet, pitfall_bullets, rule_bullet
from skill2env_dagster.tasks.predicates.entry_rules import FIXABLE_FORMATS, FORMAT_NAMES, fix, violation
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.shapes.entry_files import (
    NOTES,
    SOLVER,
    EntryLayout,
    csv_text,
    hidden_worlds,
    layout,
    make_world,
    notes,
    render,
    single_layout,
    spec,
)
from skill2env_dagster.tasks.shapes.entry_programs import HIDDEN, install
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric
from skill2env_dagster.tasks.worlds.entries import EntryWorld

NORMALISE = "/app/bin/normalise-register"
SAMPLE = "/app/samples/register.csv"
SAMPLE_OUT = "/app/samples/register.fixed.csv"


def fixable(p: Predicate) -> bool:
    return p.kind == "replace_token" or (p.kind == "format" and p.params.get("convention") in FIXABLE_FORMATS)


def fixed_world(world: EntryWorld) -> EntryWorld:
    """A copy with every reportable breach of a fixable rule repaired (exempt, out-of-scope, malformed: untouched)."""
    entries = []
    for e in world.entries:
        values = dict(e.values)
        judged = not e.malformed and world.in_scope(e)
        for p in world.preds:
            if not judged or (world.exempt.get(p.id) and e.context == world.exempt[p.id]):
                continue
            col = world.fields[p.id]
            if violation(p, values[col]) is not None:
                values[col] = fix(p, values[col])
        entries.append(type(e)(**{**e.__dict__, "values": values}))
    return EntryWorld(world.preds, world.fields, world.exempt, entries, world.scoped, world.teams)


FIX_PROGRAM = r'''
FIXES = {"kebab_case": "-", "snake_case": "_", "upper_snake": "_"}
MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}


def words(name):
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[\s_\-./]+", name) if w]


def iso(v):
    v = v.strip()
    for rx, order in ((r"(\d{4})[/.](\d{1,2})[/.](\d{1,2})", "ymd"), (r"(\d{4})(\d{2})(\d{2})", "ymd"),
                      (r"(\d{4})-(\d{1,2})-(\d{1,2})", "ymd"), (r"(\d{1,2}) ([A-Za-z]{3})[a-z]* (\d{4})", "dmy")):
        m = re.fullmatch(rx, v)
        if m:
            a, b, c = m.groups()
            y, mo, d = (a, b, c) if order == "ymd" else (c, MONTHS[b.lower()], a)
            return f"{int(y):04d}-{int(mo):02d}-{int(d):02d}"
    return v


def repaired(rule, value):
    if rule["kind"] == "replace_token":
        return re.sub(r"(?<![\w-])" + re.escape(rule["token"]) + r"(?![\w-])", rule["replacement"], value)
    conv, w = rule["convention"], words(value)
    if conv in FIXES:
        out = FIXES[conv].join(w)
        return out.upper() if conv == "upper_snake" else out
    if conv == "camel_case":
        return w[0] + "".join(x.capitalize() for x in w[1:])
    if conv == "pascal_case":
        return "".join(x.capitalize() for x in w)
    if conv == "iso_date":
        return iso(value)
    v = value.strip().lstrip("vV").split("-", 1)
    nums = [str(int(x)) for x in v[0].split(".") if x.isdigit()][:3]
    return ".".join(nums + ["0"] * (3 - len(nums))) + (f"-{v[1]}" if len(v) > 1 else "")


def fix_file(path, meta=None):
    """The file's lines with every breaching value of an in-scope, well-formed, non-exempt row repaired."""
    text = pathlib.Path(path).read_text()
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.replace("\r\n", "\n").split("\n")
    head = lines[0].split(SPEC["sep"])
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(SPEC["sep"])
        if not line or len(cells) != len(head):
            out.append(line)
            continue
        rec = dict(zip(head, cells))
        rec.update((meta or {}).get(cells[0], {}))
        if SPEC["scoped"] and rec.get("status", "active") != "active":
            out.append(line)
            continue
        for rule in SPEC["rules"]:
            if rule["exempt"] and rec.get("context", "") == rule["exempt"]:
                continue
            col = head.index(rule["field"])
            if breach(rule, cells[col]) is not None:
                cells[col] = repaired(rule, cells[col])
        out.append(SPEC["sep"].join(cells))
    return nl.join(out)
'''

NAIVE_FIX = '''
# The naive repair: every row, exceptions and scope ignored, tokens replaced as substrings, names split only at
# separators (camel humps kept together).
for r in SPEC["rules"]:
    r["exempt"] = ""
SPEC["scoped"] = False
_repaired = repaired


def whole(token, text):
    return token in text


def words(name):
    return [w.lower() for w in re.split(r"[\\s_\\-./]+", name) if w]


def iso(v):
    return v.replace("/", "-").replace(".", "-")


def repaired(rule, value):
    if rule["kind"] == "replace_token":
        return value.replace(rule["token"], rule["replacement"])
    if rule["convention"] == "semver":
        return value.lstrip("vV")
    return _repaired(rule, value)
'''

CLI_FIX = '''
import sys
SPEC["sep"] = ","
sys.stdout.write(fix_file(sys.argv[1]))
'''

TRANSFORM_LOADER = '''
import random
import tempfile


def run_on(text):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
        fh.write(text)
    return run_tool([TOOL, fh.name])


def load():
    results = {}
    for name, case in EXPECTED["inputs"].items():
        results[name] = run_tool([TOOL, HIDDEN + "/" + name])
    return results if any(v is not None for v in results.values()) else None


def changed(case, got):
    """Jaccard of the rows the program changed against the rows that had to change."""
    before = set(case["input"])
    return jaccard([ln for ln in case["output"] if ln not in before], [ln for ln in got if ln not in before])


def per_input(score):
    vals = [score(EXPECTED["inputs"][n], out[n]) if out[n] else 0.0 for n in EXPECTED["inputs"]]
    return sum(vals) / len(vals)
'''


def _transform_metrics(ids: list[str], metamorphic: bool) -> list[Metric]:
    out = [
        Metric("fixed_rows", "Mean over hidden registers of the Jaccard of changed rows against the rows that had "
               "to change.", "return per_input(changed)", ("jaccard",), ids),
        Metric("untouched_rows", "Mean over hidden registers of the share of rows that had to stay unchanged and "
               "did, weighted by that register's fixed-row score.",
               'def score(case, got):\n    keep = [ln for ln in case["input"][1:] if ln in case["output"]]\n'
               '    kept = sum(ln in got for ln in keep) / len(keep) if keep else 1.0\n'
               '    return kept * changed(case, got)\nreturn per_input(score)', ("jaccard",), ids),
    ]
    if metamorphic:
        out += [
            Metric("idempotent", "Running the program on its own output changes nothing (weighted by correctness).",
                   'def score(case, got):\n    again = run_on("\\n".join(got) + "\\n")\n'
                   '    return changed(case, got) if again == got else 0.0\nreturn per_input(score)',
                   ("jaccard",), ids),
            Metric("order_free", "Shuffling the input rows shuffles the output rows and changes nothing else "
                   "(weighted by correctness).",
                   'def score(case, got):\n    rows = case["input"][1:]\n'
                   '    random.Random(7).shuffle(rows)\n'
                   '    other = run_on("\\n".join(case["input"][:1] + rows) + "\\n")\n'
                   '    same = other is not None and other[:1] == got[:1] and sorted(other[1:]) == sorted(got[1:])\n'
                   '    return changed(case, got) if same else 0.0\nreturn per_input(score)', ("jaccard",), ids),
        ]
    return out


def _fix_rubric(inp: ShapeInput, world: EntryWorld, first: Bullet, second: Bullet) -> RubricSpec:
    avoid = [exception_bullet(p, world.exempt[p.id]) for p in world.preds if world.exempt.get(p.id)][:1]
    avoid += pitfall_bullets(inp.knowledge, world.preds, 2 - len(avoid))
    avoid.append(Bullet("Rewriting values that already follow the rules, or any other byte", "metric:untouched"))
    practice = [rule_bullet(p, _how(p)) for p in world.preds[:3]]
    return RubricSpec([first, second], avoid, practice)


def _how(p: Predicate) -> str:
    if p.kind == "replace_token":
        return f"by replacing each whole `{p.params['token']}` with `{p.params['replacement']}`"
    return f"by rewriting each breaching value into {FORMAT_NAMES[p.params['convention']]}, keeping its words"


def _fix_semantics(world: EntryWorld) -> list[str]:
    sem = []
    for p in world.preds:
        if p.kind == "replace_token":
            sem.append(f"For {p.id}, each whole `{p.params['token']}` in {world.fields[p.id]} becomes "
                       f"`{p.params['replacement']}`.")
        else:
            conv = p.params["convention"]
            keep = {"iso_date": "the same calendar date", "semver": "the same version numbers"}.get(conv, "its words")
            sem.append(f"For {p.id}, {with_article(world.fields[p.id])} value that is not in {FORMAT_NAMES[conv]} is "
                       f"rewritten into it, keeping {keep}.")
    if world.scoped:
        sem.append("Records whose status is not active are left exactly as they are.")
    if world.invalid():
        sem.append("Rows that are missing a cell are left exactly as they are.")
    return sem


class EntryNormaliser:
    name = "entry_normaliser"
    archetype = "transform_convert"
    verifier = "differential_equivalence"
    family = "entries"
    kinds = frozenset({"replace_token", "format"})
    effects = frozenset({"multi_rule", "boundary", "precondition", "corrupted", "rule_in_docs", "preserve"})
    metamorphic = False

    def accepts(self, p: Predicate) -> bool:
        return fixable(p)

    def design(self, inp: ShapeInput) -> Design:
        world = make_world(inp, teams=1)
        worlds = hidden_worlds(inp, 3, world.columns)
        cases = {}
        for i, w in enumerate(worlds):
            name = f"register-{i + 1}.csv"
            cases[name] = {"input": csv_text(w, name).splitlines(),
                           "output": csv_text(fixed_world(w), name).splitlines()}
        src = SOLVER.replace("__SPEC__", repr(json.dumps(spec(world, single_layout(world, "in.csv"))))) + FIX_PROGRAM
        program = "#!/usr/bin/env python3\n" + (src + CLI_FIX).strip("\n") + "\n"
        naive = "#!/usr/bin/env python3\n" + (src + NAIVE_FIX + CLI_FIX).strip("\n") + "\n"
        files: dict[str, str | bytes] = {NOTES.lstrip("/"): notes(inp, world),
                                         SAMPLE.lstrip("/"): csv_text(world, SAMPLE.lstrip("/")),
                                         SAMPLE_OUT.lstrip("/"): csv_text(fixed_world(world), SAMPLE_OUT.lstrip("/"))}
        ids = [p.id for p in world.preds]
        check = CheckScript(TRANSFORM_LOADER, _transform_metrics(ids, self.metamorphic),
                            {"TOOL": repr(NORMALISE), "HIDDEN": repr(HIDDEN)}, ("run_tool", "jaccard"))
        extra = (["It must give the same rows whatever their order in the input, and running it again on its own "
                  "output must change nothing."] if self.metamorphic else [])
        slots = Slots(
            topic=f"the {inp.topic} register clean-up",
            situation="Every new export breaks the same documented rules, so we want a program that repairs them "
                      "instead of doing it by hand.",
            inputs=f"A sample export is in {SAMPLE}, and {SAMPLE_OUT} shows it after the repair.",
            guidance=f"The rules are quoted in {NOTES}, each under an id (R1, R2, …).",
            ask=f"write {NORMALISE}, which repairs every value that breaks those rules in a register file",
            semantics=[f"It is run as `{NORMALISE} FILE.csv` and prints the whole file to standard output with "
                       "the breaching values repaired and every other row, cell and line exactly as it was.",
                       *_fix_semantics(world), *extra],
            deliverable="It will be judged by running it on other exports, so it has to implement the rules.",
            constraints=["Any language available in the container is fine; keep the shebang and the exec bit."],
            hint="Python 3 is available; the sample pair shows the expected effect.", example="",
            outputs=[NORMALISE, "/app/bin"])
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Write a program that repairs {len(world.preds)} of the playbook's fixable rules in any "
                      f"register, graded on {len(worlds)} hidden registers"
                      + (" and two metamorphic relations." if self.metamorphic else "."),
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/bin"], slots=slots, check=check,
            expected={"inputs": cases},
            rubric=_fix_rubric(inp, world, Bullet(f"Make {NORMALISE} repair exactly the breaching values of any "
                                                  "register", "metric:fixed_rows"),
                               Bullet("Leave every other row byte-identical" + (", and keep the program idempotent "
                                      "and independent of row order" if self.metamorphic else ""),
                                      "metric:untouched_rows")),
            solve=install(NORMALISE, program), wrong=install(NORMALISE, naive),
            cheats={"cat_input.sh": cheats.program(NORMALISE, 'cat "$1"'),
                    "echo_sample_fix.sh": cheats.program(NORMALISE, f"cat {SAMPLE_OUT}"),
                    "lowercase_everything.sh": cheats.program(NORMALISE, "tr 'A-Z' 'a-z' < \"$1\""),
                    "print_nothing.sh": cheats.program(NORMALISE, "exit 0")},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=3, rules_in_play=len(world.preds),
                                  dependent_steps=2 + self.metamorphic, items=len(world.entries)),
            challenges=[Challenge(pattern="", dimension="", effect=e, instantiation=t, tested_by=["fixed_rows"])
                        for e, t in {"multi_rule": "graded on hidden registers: only a general repair passes",
                                     "boundary": "near-miss names and valid edge values must not be touched",
                                     "precondition": "records that are not active stay as they are",
                                     "corrupted": "rows missing a cell stay as they are",
                                     "rule_in_docs": "the replacements and conventions are only in the notes",
                                     "preserve": "every other byte must survive"}.items() if e in inp.effects],
            facts=[f"{SAMPLE}: a sample register", f"{SAMPLE_OUT}: the same after the repair",
                   f"{NOTES}: the playbook's rules, quoted", f"{len(worlds)} hidden registers in tests/"],
            boundary=InformationBoundary(stated=["program path, arguments and output", "what a repair is per rule"],
                                         discover=["the exact tokens and conventions (in the notes)",
                                                   "which records are exempt"]),
            docs=[NOTES], deliverables=[NORMALISE],
            hidden_tests={f"hidden/{name}": "\n".join(c["input"]) + "\n" for name, c in cases.items()},
        )


class MetamorphicNormaliser(EntryNormaliser):
    name = "entry_normaliser_mr"
    verifier = "metamorphic_invariants"
    metamorphic = True


FIX_LOADER = '''
def load():
    got = {}
    for path in EXPECTED["files"]:
        p = pathlib.Path(path)
        got[path] = p.read_text().replace("\\r\\n", "\\n").split("\\n") if p.is_file() else []
    return got


def changed_lines(path, lines):
    before = set(EXPECTED["before"][path])
    return [[path, ln] for ln in lines if ln not in before]
'''


class EntryFix:
    name = "entry_fix"
    archetype = "edit_preserve"
    verifier = "exact_state"
    family = "entries"
    kinds = frozenset({"replace_token", "format"})
    effects = frozenset({"split_sources", "precondition", "corrupted", "boundary", "rule_in_docs", "preserve",
                         "encoding", "multi_rule"})

    def accepts(self, p: Predicate) -> bool:
        return fixable(p)

    def design(self, inp: ShapeInput) -> Design:
        world = make_world(inp)
        lay: EntryLayout = layout(world, inp)
        before = render(world, lay)
        after = render(fixed_world(world), lay)
        data = [p for p in before if p.startswith("app/register/") and "registry" not in p]
        expected = {"files": ["/" + p for p in data],
                    "before": {"/" + p: before[p].replace("\r\n", "\n").split("\n") for p in data},
                    "after": {"/" + p: after[p].replace("\r\n", "\n").split("\n") for p in data}}
        files: dict[str, str | bytes] = {**before, NOTES.lstrip("/"): notes(inp, world)}
        src = SOLVER.replace("__SPEC__", repr(json.dumps(spec(world, lay)))) + FIX_PROGRAM
        main = ('\nmeta = {}\nif SPEC["registry"]:\n'
                '    reg = list(csv.reader(pathlib.Path(SPEC["registry"]).read_text().splitlines()))\n'
                '    meta = {r[0]: dict(zip(reg[0], r)) for r in reg[1:]}\n'
                'for path in SPEC["files"]:\n    pathlib.Path(path).write_text(fix_file(path, meta))\n')
        ids = [p.id for p in world.preds]
        metrics = [
            Metric("fixed_values", "Jaccard of the changed lines against the lines that had to change.",
                   'want = [c for p in EXPECTED["files"] for c in changed_lines(p, EXPECTED["after"][p])]\n'
                   'got = [c for p in EXPECTED["files"] for c in changed_lines(p, out[p])]\nreturn jaccard(want, got)',
                   ("jaccard",), ids),
            Metric("files_exact", "Share of the register files needing repairs that now equal the repaired file byte "
                   "for byte.",
                   'todo = [p for p in EXPECTED["files"] if EXPECTED["after"][p] != EXPECTED["before"][p]]\n'
                   'return sum(out[p] == EXPECTED["after"][p] for p in todo) / len(todo)', (), ids),
            Metric("untouched", "Share of lines that had to stay unchanged and did, weighted by the fixed-value "
                   "score.", 'keep = [(p, ln) for p in EXPECTED["files"] for ln in EXPECTED["after"][p]\n'
                   '        if ln in set(EXPECTED["before"][p])]\n'
                   'kept = sum(ln in set(out[p]) for p, ln in keep) / len(keep)\n'
                   'want = [c for p in EXPECTED["files"] for c in changed_lines(p, EXPECTED["after"][p])]\n'
                   'got = [c for p in EXPECTED["files"] for c in changed_lines(p, out[p])]\n'
                   'return kept * jaccard(want, got)', ("jaccard",), ids),
        ]
        check = CheckScript(FIX_LOADER, metrics, {}, ("jaccard",))
        paths = join_words(["/" + p for p in data])
        slots = Slots(
            topic=f"the {inp.topic} register clean-up",
            situation="Before the export goes out, every value that breaks one of our repairable rules has to "
                      "be put right.",
            inputs=f"The register is in {paths}" + (" with each record's status and context in "
                                                    "/app/register/registry.csv." if lay.registry else "."),
            guidance=f"The rules are quoted in {NOTES}, each under an id (R1, R2, …).",
            ask="repair every breaching value of the register in place",
            semantics=["Change only the breaching values; every other row, cell, delimiter and line ending stays "
                       "exactly as it is.", *_fix_semantics(world)],
            deliverable="Edit the register files where they are.", constraints=["Leave the notes unchanged."],
            hint="Python 3 is available.", example="", outputs=["/" + p for p in data])
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Repair in place every breach of {len(world.preds)} of the playbook's fixable rules in a "
                      f"{len(world.entries)}-record register, leaving everything else byte-identical.",
            env_files=files, docker_lines=["COPY app/ /app/"], slots=slots, check=check, expected=expected,
            rubric=_fix_rubric(inp, world, Bullet("Repair exactly the breaching values", "metric:fixed_values"),
                               Bullet("Leave every other byte of the register unchanged", "metric:files_exact")),
            solve=solver_script(src + main), wrong=solver_script(src + NAIVE_FIX + main),
            cheats={"lowercase_all.sh": cheats.raw("for f in " + " ".join("/" + p for p in data)
                                                   + "; do tr 'A-Z' 'a-z' < \"$f\" > /tmp/x && cp /tmp/x \"$f\"; "
                                                   "done"),
                    "truncate_files.sh": cheats.raw("".join(f"head -n 1 /{p} > /tmp/h && cp /tmp/h /{p}\n"
                                                            for p in data)),
                    "empty_files.sh": cheats.empty(["/" + p for p in data])},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=len(data) + 1 + lay.registry,
                                  rules_in_play=len(world.preds), dependent_steps=1, items=len(world.entries)),
            challenges=[Challenge(pattern="", dimension="", effect=e, instantiation=t, tested_by=["fixed_values"])
                        for e, t in {"split_sources": "status and context are in registry.csv",
                                     "precondition": "records that are not active stay as they are",
                                     "corrupted": "rows missing a cell stay as they are",
                                     "boundary": "near-miss names and valid edge values must not be touched",
                                     "rule_in_docs": "the replacements and conventions are only in the notes",
                                     "preserve": "every other byte must survive",
                                     "encoding": "the files use ';' and CRLF, which must be kept",
                                     "multi_rule": "several rules apply to each record"}.items()
                        if e in inp.effects],
            facts=[f"{p}: register records" for p in expected["files"]] + [f"{NOTES}: the playbook's rules, quoted"],
            boundary=InformationBoundary(stated=["which files to edit", "what a repair is per rule"],
                                         discover=["the exact tokens and conventions (in the notes)",
                                                   "which records are exempt or out of scope"]),
            docs=[NOTES], deliverables=list(expected["files"]),
        )
