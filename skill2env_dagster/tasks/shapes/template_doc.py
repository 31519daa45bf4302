"""Documents that must follow one of the skill's output templates.

- template_author (author_to_constraints / metric_threshold): write one document per case from its notes, with the
  template's sections in the template's order and every note under the section it belongs to;
- template_repair (edit_preserve / exact_state): fix drafts whose sections are missing, misordered or renamed,
  keeping every body verbatim.

The template (its section names and order) is the skill's, quoted in /app/docs; an echo of the template without
the case's content, or content without the template, earns nothing.
"""

from __future__ import annotations

import json

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.models.labels import to_label
from skill2env_dagster.tasks.compose.docs import notes_doc
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, pitfall_bullets
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric
from skill2env_dagster.tasks.worlds.documents import NONE_BODY, DocWorld, build, damage, heading_key, render


def doc_path(pred: Predicate) -> str:
    """The template's doc, named after it."""
    return f"/app/docs/{to_label(pred.subject, 'layout')[:40]}.md"
CASES = "/app/cases"
OUT = "/app/out"
DRAFTS = "/app/drafts"

PARSE = '''
import re


def sections(text):
    """[(heading, body)] of a Markdown document; text before the first heading is the preamble ('')."""
    out, head, body = [], "", []
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\\s+(.*?)\\s*#*\\s*$", line)
        if m:
            out.append((head, "\\n".join(body)))
            head, body = m.group(1), []
        else:
            body.append(line)
    out.append((head, "\\n".join(body)))
    return out


def key(h):
    return re.sub(r"\\s+", " ", re.sub(r"[*_`#]", "", h)).strip().lower()


def lcs(a, b):
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            d[i + 1][j + 1] = d[i][j] + 1 if a[i] == b[j] else max(d[i][j + 1], d[i + 1][j])
    return d[-1][-1]
'''

AUTHOR_LOADER = PARSE + '''

def load():
    docs = {}
    for case in EXPECTED["cases"]:
        p = pathlib.Path(OUT) / (case + ".md")
        docs[case] = p.read_text(errors="replace") if p.is_file() else None
    return docs if any(v for v in docs.values()) else None


def placed(doc, facts):
    """Which facts sit under the heading they belong to and nowhere else (field values: before the template's
    first section)."""
    secs = sections(doc)
    template = set(EXPECTED["headings"])
    ok = []
    for section, token in facts:
        where = [key(h) for h, body in secs if token in body]
        if section == "":
            ok.append(bool(where) and all(w not in template for w in where))
        else:
            ok.append(where == [key(section)])
    return ok


def exact_bodies(doc, facts):
    """Every template section holds exactly its notes (one per line) or the single line None."""
    notes = {}
    for section, token in facts:
        if section:
            notes.setdefault(key(section), []).append(token)
    for h, body in sections(doc):
        if key(h) not in EXPECTED["headings"]:
            continue
        lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
        want = notes.get(key(h), [])
        if not want and lines != ["None."]:
            return False
        if want and (len(lines) != len(want) or not all(any(t in ln for ln in lines) for t in want)):
            return False
    return True
'''

REPAIR_LOADER = PARSE + '''

def load():
    docs = {}
    for case in EXPECTED["cases"]:
        p = pathlib.Path(DRAFTS) / (case + ".md")
        docs[case] = p.read_text(errors="replace") if p.is_file() else None
    return docs
'''


def _facts(world: DocWorld) -> dict[str, list[list[str]]]:
    return {c.id: [[n.section, n.token] for n in c.notes] + [["", v] for v in c.fields.values()] for c in world.cases}


def _case_file(world: DocWorld, case_id: str) -> str:
    case = next(c for c in world.cases if c.id == case_id)
    lines = [f"case: {case.id}"] + [f"{f}: {v}" for f, v in case.fields.items()] + ["", "notes:"]
    lines += [f"- ({n.section.lower()}) {n.text}" for n in case.notes]
    return "\n".join(lines) + "\n"


AUTHOR_SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)
out = pathlib.Path(SPEC["out"])
out.mkdir(parents=True, exist_ok=True)
for path in sorted(pathlib.Path(SPEC["cases"]).glob("*.txt")):
    lines = path.read_text().splitlines()
    case = lines[0].split(": ", 1)[1]
    fields, notes = {}, []
    for ln in lines[1:]:
        if m := re.match(r"- \((.*?)\) (.*)$", ln):
            notes.append((m.group(1), m.group(2)))
        elif ": " in ln:
            k, v = ln.split(": ", 1)
            fields[k] = v
    doc = [f"# {case}", ""] + [f"**{f}:** {fields[f]}" for f in SPEC["fields"]] + ([""] if SPEC["fields"] else [])
    for h in SPEC["headings"]:
        body = [t for s, t in notes if s == h.lower()]
        doc += [f"## {h}", ""] + (body or ["None."]) + [""]
    (out / f"{case}.md").write_text("\n".join(doc).rstrip() + "\n")
'''

AUTHOR_NAIVE = '''
# The naive reading: the sections in the order the notes mention them, and only those.
_order = []
for path in sorted(pathlib.Path(SPEC["cases"]).glob("*.txt")):
    for ln in path.read_text().splitlines():
        if m := re.match(r"- \\((.*?)\\) ", ln):
            if m.group(1) not in _order:
                _order.append(m.group(1))
for path in sorted(out.glob("*.md")):
    text = path.read_text()
    keep = [h for h in SPEC["headings"] if h.lower() in _order]
    keep.sort(key=lambda h: _order.index(h.lower()))
    parts = text.split("\\n## ")
    bodies = {p.split("\\n", 1)[0]: p.split("\\n", 1)[1] if "\\n" in p else "" for p in parts[1:]}
    path.write_text(parts[0] + "".join(f"\\n## {h}\\n" + bodies.get(h, "") for h in keep))
'''

REPAIR_SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)
for path in sorted(pathlib.Path(SPEC["drafts"]).glob("*.md")):
    text = path.read_text()
    head, *parts = re.split(r"(?m)^## ", text)
    bodies = {}
    for p in parts:
        title, _, body = p.partition("\n")
        bodies[re.sub(r"\s+", " ", title).strip().lower()] = body
    doc = head
    for h in SPEC["headings"]:
        body = bodies.get(h.lower(), bodies.get(h.lower() + " notes", "None."))
        doc += f"## {h}\n\n" + body.strip("\n") + "\n\n"
    path.write_text(doc.rstrip() + "\n")
'''

REPAIR_NAIVE = '''
# The naive repair: add the missing sections at the end and leave order and names as they are.
for path in sorted(pathlib.Path(SPEC["drafts"]).glob("*.md")):
    text = pathlib.Path(path).read_text()
    for h in SPEC["headings"]:
        if f"## {h}" not in text and f"## {h.upper()}" not in text:
            text = text.rstrip() + f"\\n\\n## {h}\\n\\nNone.\\n"
    path.write_text(text)
'''


def _challenges(inp: ShapeInput, text: dict[str, tuple[str, list[str]]]) -> list[Challenge]:
    return [Challenge(pattern="", dimension="", effect=e, instantiation=text[e][0], tested_by=text[e][1])
            for e in inp.effects if e in text]


class TemplateAuthor:
    name = "template_author"
    archetype = "author_to_constraints"
    verifier = "metric_threshold"
    family = "template"
    kinds = frozenset({"sections"})
    max_preds = 1
    effects = frozenset({"boundary", "rule_in_docs", "multi_rule", "split_sources", "preserve"})

    def design(self, inp: ShapeInput) -> Design:
        pred = inp.preds[0]
        world = build(pred, 1 + inp.level, inp.rng("docs"), inp.vocabulary, 2 + inp.level)
        files: dict[str, str | bytes] = {f"app/cases/{c.id}.txt": _case_file(world, c.id) for c in world.cases}
        files[doc_path(pred).lstrip("/")] = notes_doc(pred.subject, inp.text, [pred],
                                           f"Quoted from our {inp.text.name} playbook: the structure every such "
                                           "document follows.")
        expected = {"cases": [c.id for c in world.cases], "facts": _facts(world),
                    "headings": [heading_key(h) for h in world.headings]}
        spec = {"cases": CASES, "out": OUT, "headings": world.headings, "fields": world.fields}
        solver = AUTHOR_SOLVER.replace("__SPEC__", repr(json.dumps(spec)))
        metrics = [
            Metric("facts_placed", "Share of the case notes and field values found under the section they belong "
                   "to (and nowhere else).",
                   'flags = [ok for c in EXPECTED["cases"] if out[c] for ok in placed(out[c], EXPECTED["facts"][c])]\n'
                   'return sum(flags) / sum(len(v) for v in EXPECTED["facts"].values())', (), [pred.id]),
            Metric("section_order", "Per document: longest common subsequence of its headings with the template's, "
                   "over the longer list, weighted by that document's placed notes.",
                   'scores = []\nfor c in EXPECTED["cases"]:\n    doc = out[c]\n    if not doc:\n'
                   '        scores.append(0.0)\n        continue\n'
                   '    heads = [key(h) for h, _ in sections(doc) if h]\n    want = EXPECTED["headings"]\n'
                   '    heads = [h for h in heads if h != key(c)]\n'
                   '    share = sum(placed(doc, EXPECTED["facts"][c])) / len(EXPECTED["facts"][c])\n'
                   '    scores.append(lcs(heads, want) / max(len(heads), len(want)) * share)\n'
                   'return sum(scores) / len(scores)', (), [pred.id]),
            Metric("documents_complete", "Share of documents with the template's sections exactly in order, each "
                   "holding exactly its notes (or the single line `None.`).",
                   'done = 0\nfor c in EXPECTED["cases"]:\n    doc = out[c]\n    if not doc:\n        continue\n'
                   '    secs = [(key(h), b.strip()) for h, b in sections(doc) if h and key(h) != key(c)]\n'
                   '    if [h for h, _ in secs] == EXPECTED["headings"] and all(placed(doc, EXPECTED["facts"][c])) '
                   'and exact_bodies(doc, EXPECTED["facts"][c]):\n        done += 1\n'
                   'return done / len(EXPECTED["cases"])', (), [pred.id]),
        ]
        check = CheckScript(AUTHOR_LOADER, metrics, {"OUT": repr(OUT)})
        outputs = [f"{OUT}/{c.id}.md" for c in world.cases]
        n_notes = sum(len(c.notes) for c in world.cases)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Write {len(world.cases)} document(s) that follow the playbook's {pred.subject!r} template, "
                      f"placing {n_notes} case notes under the right sections.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=self._slots(inp, world), check=check, expected=expected, rubric=self._rubric(inp, world),
            solve=solver_script(solver), wrong=solver_script(solver + AUTHOR_NAIVE),
            cheats=self._cheats(world, inp),
            complexity=Complexity(level=inp.sample.complexity, files_to_read=len(world.cases) + 1,
                                  rules_in_play=len(world.headings), dependent_steps=1, items=n_notes),
            challenges=_challenges(inp, {
                "boundary": ("sections without notes must still appear, with None.", ["documents_complete"]),
                "rule_in_docs": ("the section names and order are only in the quoted template", ["section_order"]),
                "multi_rule": ("several cases, each with its own notes and fields", ["facts_placed"]),
                "split_sources": ("each case's notes are in its own file", ["facts_placed"]),
                "preserve": ("every note must appear verbatim, once", ["facts_placed"])}),
            facts=[f"{CASES}/*.txt: {len(world.cases)} case file(s) with fields and notes",
                   f"{doc_path(pred)}: the skill's template {pred.subject!r}, quoted"],
            boundary=InformationBoundary(
                stated=["where the cases and the template are", "one document per case, notes under their section"],
                discover=["the template's exact section names and order"]),
            docs=[doc_path(pred)], deliverables=outputs,
        )

    def _slots(self, inp: ShapeInput, world: DocWorld) -> Slots:
        name = f"“{world.pred.subject}”"
        return Slots(
            topic=f"the {inp.topic} write-ups",
            situation=f"The write-ups have to follow {name} exactly so the reviewers can read them side by side.",
            inputs=f"Each case is a text file in {CASES} with its field values and its notes, each note tagged "
                   "with the heading it belongs under.",
            guidance=f"{name} is copied into {doc_path(world.pred)}.",
            ask=f"write one Markdown document per case in the shape {name} lays out",
            semantics=[f"Use every heading of {name} as a `## ` heading, worded and ordered as there, and put each "
                       "note verbatim under its heading, one per line.",
                       "A heading without notes gets the single line `None.`, and the field values go before the "
                       "first heading as `**Field:** value` lines."],
            deliverable=f"Save each document as {OUT}/<case>.md, named after its case.",
            constraints=["Leave the case files as they are."],
            hint="A heading line starts with ## followed by its name.",
            example="## <heading>", outputs=[OUT, *[f"{OUT}/{c.id}.md" for c in world.cases]])

    def _rubric(self, inp: ShapeInput, world: DocWorld) -> RubricSpec:
        p = world.pred
        must = [Bullet("Write one document per case with every note verbatim under its own heading",
                       "metric:facts_placed"),
                Bullet(f"Use every heading of {p.subject!r}, worded and ordered as there, with None. for empty ones",
                       "metric:documents_complete")]
        avoid = pitfall_bullets(inp.knowledge, [p], 2)
        avoid.append(Bullet("Dropping headings that have no notes, or inventing new ones", p.source.label))
        practice = [Bullet(f"Follow {p.subject!r} as laid out: {' / '.join(world.headings)[:200]}", p.source.label)]
        if world.fields:
            practice.append(Bullet(f"Fill {', '.join(world.fields)} as {p.subject!r} asks", p.source.label))
        return RubricSpec(must, avoid, practice)

    def _cheats(self, world: DocWorld, inp: ShapeInput) -> dict[str, str]:
        bare = "".join(f"## {h}\n\nNone.\n\n" for h in world.headings)
        dump = {c.id: f"# {c.id}\n\n## {world.headings[0]}\n\n" + "\n".join(n.text for n in c.notes) + "\n"
                for c in world.cases}
        return {
            "template_echo.sh": cheats.raw("".join(
                f"mkdir -p {OUT}\ncat > {OUT}/{c.id}.md <<'EOF'\n# {c.id}\n\n{bare}EOF\n" for c in world.cases)),
            "notes_in_first_section.sh": cheats.raw("".join(
                f"mkdir -p {OUT}\ncat > {OUT}/{c.id}.md <<'EOF'\n{dump[c.id]}EOF\n" for c in world.cases)),
            "copy_case_files.sh": cheats.raw("".join(f"mkdir -p {OUT}\ncp {CASES}/{c.id}.txt {OUT}/{c.id}.md\n"
                                                     for c in world.cases)),
            "empty_documents.sh": cheats.empty([f"{OUT}/{c.id}.md" for c in world.cases]),
        }


class TemplateRepair:
    name = "template_repair"
    archetype = "edit_preserve"
    verifier = "exact_state"
    family = "template"
    kinds = frozenset({"sections"})
    max_preds = 1
    effects = frozenset({"preserve", "boundary", "rule_in_docs", "multi_rule", "partial_prior"})

    def design(self, inp: ShapeInput) -> Design:
        pred = inp.preds[0]
        world = build(pred, 2 + inp.level, inp.rng("docs"), inp.vocabulary, 2 + inp.level)
        world.fields = []
        damage(world, inp.rng("damage"))
        files: dict[str, str | bytes] = {}
        for c in world.cases:
            draft = [f"# {c.id}", ""]
            for h, body in world.drafts[c.id]:
                draft += [f"## {h}", "", body, ""]
            files[f"app/drafts/{c.id}.md"] = "\n".join(draft).rstrip() + "\n"
        files[doc_path(pred).lstrip("/")] = notes_doc(pred.subject, inp.text, [pred],
                                           f"Quoted from our {inp.text.name} playbook: the structure every such "
                                           "document follows.")
        expected = {"cases": [c.id for c in world.cases], "final": {c.id: render(world, c) for c in world.cases},
                    "headings": world.headings, "facts": _facts(world)}
        spec = {"drafts": DRAFTS, "headings": world.headings}
        solver = REPAIR_SOLVER.replace("__SPEC__", repr(json.dumps(spec)))
        metrics = [
            Metric("documents_exact", "Share of drafts that now equal the repaired document byte for byte.",
                   'return sum(out[c] == EXPECTED["final"][c] for c in EXPECTED["cases"]) / len(EXPECTED["cases"])',
                   (), [pred.id]),
            Metric("structure_restored", "Per draft: 1 when its headings are exactly the template's, in order, "
                   "times the share of its bodies still under their own section.",
                   'scores = []\nfor c in EXPECTED["cases"]:\n    doc = out[c] or ""\n'
                   '    heads = [h for h, _ in sections(doc)[1:] if h != c]\n'
                   '    bodies = dict((key(h), b) for h, b in sections(doc))\n'
                   '    kept = [tok in bodies.get(key(s), "") for s, tok in EXPECTED["facts"][c] if s]\n'
                   '    share = sum(kept) / len(kept) if kept else 1.0\n'
                   '    scores.append(share if heads == EXPECTED["headings"] else 0.0)\n'
                   'return sum(scores) / len(scores)', (), [pred.id]),
        ]
        check = CheckScript(REPAIR_LOADER, metrics, {"DRAFTS": repr(DRAFTS)})
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Repair {len(world.cases)} drafts so they follow the playbook's {pred.subject!r} template "
                      "while keeping every body verbatim.",
            env_files=files, docker_lines=["COPY app/ /app/"],
            slots=self._slots(inp, world), check=check, expected=expected, rubric=self._rubric(inp, world),
            solve=solver_script(solver), wrong=solver_script(solver.split("for path")[0] + REPAIR_NAIVE),
            cheats=self._cheats(world),
            complexity=Complexity(level=inp.sample.complexity, files_to_read=len(world.cases) + 1,
                                  rules_in_play=len(world.headings), dependent_steps=1, items=len(world.cases)),
            challenges=_challenges(inp, {
                "preserve": ("every body must survive byte for byte", ["documents_exact"]),
                "boundary": ("renamed headings must be put back to the template's exact wording",
                             ["structure_restored"]),
                "rule_in_docs": ("the section names and order are only in the quoted template",
                                 ["structure_restored"]),
                "multi_rule": ("drafts break the template in different ways", ["documents_exact"]),
                "partial_prior": ("each draft is someone's half-finished work to salvage", ["documents_exact"])}),
            facts=[f"{DRAFTS}/*.md: {len(world.cases)} drafts with missing, misordered or renamed sections",
                   f"{doc_path(pred)}: the skill's template {pred.subject!r}, quoted"],
            boundary=InformationBoundary(stated=["which drafts to fix and the preservation rule"],
                                         discover=["the template's exact section names and order",
                                                   "what is wrong with each draft"]),
            docs=[doc_path(pred)], deliverables=[f"{DRAFTS}/{c.id}.md" for c in world.cases],
        )

    def _slots(self, inp: ShapeInput, world: DocWorld) -> Slots:
        name = f"“{world.pred.subject}”"
        return Slots(
            topic=f"the {inp.topic} drafts",
            situation=f"Several drafts drifted from {name}: headings went missing, moved or got renamed.",
            inputs=f"The drafts are the Markdown files in {DRAFTS}.",
            guidance=f"{name} is copied into {doc_path(world.pred)}.",
            ask=f"bring every draft back to {name} in place",
            semantics=[f"Each draft must end up with the headings of {name} as `## ` headings, worded and ordered "
                       "as there, each body kept exactly as it is.",
                       f"A heading the draft lacks is added with the single line `{NONE_BODY}` as its body, "
                       "separated by blank lines like the others; the title line stays first."],
            deliverable="Edit the drafts where they are.",
            constraints=["Do not reword, reorder or drop any body text."],
            hint="Compare each draft's ## headings with the original before editing.",
            example=f"## {world.headings[0]}", outputs=[DRAFTS])

    def _rubric(self, inp: ShapeInput, world: DocWorld) -> RubricSpec:
        p = world.pred
        must = [Bullet(f"Give every draft the headings of {p.subject!r}, worded and ordered as there",
                       "metric:structure_restored"),
                Bullet("Keep every body byte for byte, adding None. only under missing headings",
                       "metric:documents_exact")]
        avoid = pitfall_bullets(inp.knowledge, [p], 2)
        avoid.append(Bullet("Rewriting or dropping body text while moving headings", "metric:documents_exact"))
        practice = [Bullet(f"Restore {p.subject!r} as laid out: {' / '.join(world.headings)[:200]}", p.source.label)]
        return RubricSpec(must, avoid, practice)

    def _cheats(self, world: DocWorld) -> dict[str, str]:
        bare = "".join(f"## {h}\n\n{NONE_BODY}\n\n" for h in world.headings)
        return {
            "overwrite_with_template.sh": cheats.raw("".join(
                f"cat > {DRAFTS}/{c.id}.md <<'EOF'\n# {c.id}\n\n{bare}EOF\n" for c in world.cases)),
            "append_missing_only.sh": cheats.raw("".join(
                f"printf '\\n## {world.headings[-1]}\\n\\n{NONE_BODY}\\n' >> {DRAFTS}/{c.id}.md\n"
                for c in world.cases)),
            "empty_drafts.sh": cheats.empty([f"{DRAFTS}/{c.id}.md" for c in world.cases]),
        }
