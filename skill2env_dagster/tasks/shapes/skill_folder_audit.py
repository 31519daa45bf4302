"""audit_report / evidence_traceability: a repository of skill folders checked against a skill-authoring skill's
own rules (name length and characters, description length, SKILL.md or body length, a table of contents at the top
of long reference files), each finding with what the rule measures.

The skill's rules decide, with their conditions: the part each sentence names (the body is not the whole file), its
comparator ("under 500" excludes 500, "maximum 64" includes 64), the description's value rather than its YAML lines,
and a reference file longer than the limit only when it lacks a contents list.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.request import Request, render
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric, lowest_over, lowest_per_label
from skill2env_dagster.tasks.worlds import skill_folders as sf

ROOT = "/app/skills"
OUT = "/app/out/findings.csv"
HEADER = "path,rule,measured"

LOADER = '''
def load():
    rows = read_table(OUT, ["path", "rule", "measured"])
    return None if rows is None else {"rows": [r + ("",) * (3 - len(r)) for r in rows]}
'''

SOLVER = r'''
import json, pathlib, re

SPEC = json.loads(__SPEC__)
root = pathlib.Path(SPEC["root"])


def parse(text):
    lines = text.split("\n")[:-1]
    end = lines.index("---", 1)
    head = lines[1:end]
    name = desc = ""
    for i, ln in enumerate(head):
        if ln.startswith("name:"):
            name = ln.split(":", 1)[1].strip()
        if ln.startswith("description:"):
            raw = ln.split(":", 1)[1].strip()
            if raw in (">", ">-"):
                folded = []
                for nxt in head[i + 1:]:
                    if not nxt.startswith(" "):
                        break
                    folded.append(nxt.strip())
                desc = " ".join(folded)
            else:
                desc = raw[1:-1] if raw[:1] in "\"'" else raw
    return name, desc, len(lines) - end - 1, len(lines)


def breaks(length, rule):
    return length >= rule["value"] if rule["comparator"] == "lt" else length > rule["value"]


def toc(text):
    head = text.split("\n")[:10]
    if "## Contents" not in head:
        return False
    start = head.index("## Contents")
    return sum(bool(re.match(r"- \[.+\]\(#.+\)$", ln)) for ln in text.split("\n")[start + 1:start + 12]) >= 2


rows = []
for skill_md in sorted(root.glob("*/SKILL.md")):
    rel = skill_md.relative_to(root).as_posix()
    name, desc, body, whole = parse(skill_md.read_text())
    for rid, r in SPEC["rules"].items():
        part = r["part"]
        if part == "name" and breaks(len(name), r):
            rows.append((rel, rid, len(name)))
        elif part == "name_charset":
            allowed = "a-z0-9-" if r["lowercase"] else "A-Za-z0-9-"
            bad = len(re.findall("[^" + allowed + "]", name))
            if bad:
                rows.append((rel, rid, bad))
        elif part == "name_pattern" and not re.fullmatch(r["pattern"], name):
            rows.append((rel, rid, len(name)))
        elif part == "description" and breaks(len(desc), r):
            rows.append((rel, rid, len(desc)))
        elif part == "body" and breaks(body, r):
            rows.append((rel, rid, body))
        elif part == "file" and breaks(whole, r):
            rows.append((rel, rid, whole))
        elif part == "toc":
            for ref in sorted((skill_md.parent / "references").glob("*.md")):
                text = ref.read_text()
                n = len(text.split("\n")) - 1
                if n > r["value"] and not toc(text):
                    rows.append((ref.relative_to(root).as_posix(), rid, n))
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("path,rule,measured\n" + "".join(f"{p},{r},{m}\n" for p, r, m in rows))
'''

# The naive reading: whole files counted for every line rule, a folded description counted as its YAML text, "under
# N" read as "at most N", and every long reference file reported whether it has a contents list or not.
NAIVE = r'''
import json, pathlib

SPEC = json.loads(__SPEC__)
root = pathlib.Path(SPEC["root"])
rows = []
for skill_md in sorted(root.glob("*/SKILL.md")):
    rel = skill_md.relative_to(root).as_posix()
    text = skill_md.read_text()
    lines = text.split("\n")[:-1]
    name = next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("name:"))
    desc = next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("description:"))
    for rid, r in SPEC["rules"].items():
        size = {"name": len(name), "description": len(desc), "body": len(lines), "file": len(lines)}.get(r["part"])
        if size is not None and size > r["value"]:
            rows.append((rel, rid, size))
        if r["part"] == "toc":
            for ref in sorted((skill_md.parent / "references").glob("*.md")):
                n = ref.read_text().count("\n")
                if n > r["value"]:
                    rows.append((ref.relative_to(root).as_posix(), rid, n))
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("path,rule,measured\n" + "".join(f"{p},{r},{m}\n" for p, r, m in rows))
'''

def _meaning(r: dict[str, Any]) -> str:
    """What the verifier reads the rule as, in one sentence."""
    bound = "fewer than" if r["comparator"] == "lt" else "at most"
    if r["part"] == "name":
        return f"the `name` value has {bound} {r['value']} characters"
    if r["part"] == "name_charset":
        letters = "lowercase letters" if r["lowercase"] else "letters"
        return f"the `name` value uses only {letters}, digits and hyphens (`measured`: how many characters do not)"
    if r["part"] == "name_pattern":
        return (f"the whole `name` value matches the regular expression `{r['pattern']}` (`measured`: the name's "
                "length in characters)")
    if r["part"] == "description":
        return f"the `description` value has {bound} {r['value']} characters"
    if r["part"] == "body":
        return f"the SKILL.md body has {bound} {r['value']} lines"
    if r["part"] == "file":
        return f"SKILL.md as a whole has {bound} {r['value']} lines"
    return (f"a file under `references/` with more than {r['value']} lines starts with a table of contents "
            "(`measured`: its line count)")


class SkillFolderAudit:
    name = "skill_folder_audit"
    archetype = "audit_report"
    verifier = "evidence_traceability"
    family = "measures"
    kinds = frozenset({"measure"})
    max_preds = 1
    effects = frozenset({"boundary", "rule_in_docs", "multi_rule"})

    def accepts(self, p: Predicate) -> bool:
        return p.params.get("profile") == "skill_folder"

    def design(self, inp: ShapeInput) -> Design:
        p = inp.preds[0]
        rules = p.params["rules"]
        ids = {f"R{i + 1}": r for i, r in enumerate(rules)}
        rng = inp.rng("folders")
        folders = sf.plant(rules, max(len(rules) * 3 + 1, 8 + 2 * inp.level), rng)
        prose = self._prose(inp.text)
        files: dict[str, str | bytes] = {}
        expected_rows: list[list[Any]] = []
        for f in folders:
            rendered = sf.render(f, prose, rng)
            for rel, text in rendered.items():
                files[f"app/skills/{f.name}/{rel}"] = text
            expected_rows += self._findings(f.name, rendered, ids)
        doc = f"/app/docs/{re.sub(r'[^a-z0-9]+', '-', inp.text.name.lower()).strip('-')}-rules.md"
        files[doc.lstrip("/")] = self._excerpt(inp.text, rules)
        expected = {"findings": sorted([r[0], r[1]] for r in expected_rows),
                    "measured": {f"{r[0]}|{r[1]}": str(r[2]) for r in expected_rows},
                    "rules": list(ids), "conditions": sf.conditions(folders, ids)}
        if not expected_rows or len(expected_rows) * 2 > len(folders) * len(rules):
            raise ValueError("the planted folders give no findings or too many")
        spec = {"root": ROOT, "out": OUT, "rules": ids}
        metrics = [
            lowest_per_label('EXPECTED["findings"]', '[r[:2] for r in out["rows"]]', 1, "rules", "findings",
                             "The lowest, over the rules, of the Jaccard of the reported (path, rule) pairs with "
                             "that rule's breaches (a pair listed twice, or a compliant one, costs as much as a "
                             "missed one), times the share of rows naming one of the rules: every rule must be "
                             "applied with its conditions.", [p.id]),
            Metric("measured", "The lowest, over the rules, of the share of that rule's breaches reported with "
                   "exactly the measured value, over the union of the reported and the expected (path, rule) "
                   "pairs of that rule.",
                   'got = {}\nfor pth, rule, m in out["rows"]:\n    got.setdefault(pth + "|" + rule, []).append(m)\n'
                   'scores = []\nfor rid in EXPECTED["rules"]:\n'
                   '    keys = {k for k in set(got) | set(EXPECTED["measured"]) if k.endswith("|" + rid)}\n'
                   '    right = sum(1 for k in keys if got.get(k) == [EXPECTED["measured"].get(k)])\n'
                   '    scores.append(right / len(keys) if keys else 1.0)\n'
                   'return min(scores) if scores else 0.0', (), [p.id]),
            lowest_over("conditions", 'EXPECTED["findings"]', '[r[:2] for r in out["rows"]]', 1, "every_condition",
                        "The lowest, over the rules' conditions (each bound with its comparator, the part measured, "
                        "the description's value, the characters allowed, a contents list), of the Jaccard of the "
                        "(path, rule) pairs about the files planted to test that condition (1 when none of them "
                        "breaks a rule and none is reported): a reading that drops one condition scores 0 here.",
                        [p.id]),
        ]
        check = CheckScript(LOADER, metrics, {"SEP": '","', "OUT": repr(OUT)}, ("read_table",))
        n = len(folders)
        text, stated = self._instruction(inp, ids, doc)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Audit {n} skill folders against the skill's {len(rules)} authoring rules, with the measured "
                      "value of each breach.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=Slots(topic="", situation="", ask="", inputs="", guidance="", semantics=[], deliverable="",
                        outputs=[OUT, "/app/out"], text=text),
            stated=stated,
            check=check, expected=expected, rubric=self._rubric(inp, p, ids),
            solve=solver_script(SOLVER.replace("__SPEC__", repr(json.dumps(spec)))),
            wrong=solver_script(NAIVE.replace("__SPEC__", repr(json.dumps(spec)))),
            cheats=self._cheats(folders, ids),
            complexity=Complexity(level=inp.sample.complexity, files_to_read=n + 1, rules_in_play=len(rules),
                                  dependent_steps=2, items=n),
            challenges=self._challenges(inp),
            facts=[f"{ROOT}: {n} skill folders (SKILL.md with front matter, some with references/)",
                   f"{doc}: the skill's rules, quoted"],
            boundary=InformationBoundary(
                stated=["each rule, quoted, with the part it measures and its bound",
                        "how lines, characters and a contents list are counted", "the output layout"],
                discover=["which folders sit at or one past a limit", "which descriptions are folded",
                          "which long reference files have a contents list"]),
            docs=[doc], deliverables=[OUT],
        )

    def _prose(self, text: SkillText) -> list[str]:
        """Markdown prose lines of the skill's own documents (no code, no headings): realistic body text."""
        out = []
        for doc in text.docs.values():
            for _, ln in doc.unfenced():
                s = ln.strip()
                if s and not s.startswith(("#", "|", "---")) and len(s) < 160 and "," not in s[:1]:
                    out.append(s)
        return out[:400] or ["Follow the steps in order and record what you changed."]

    def _findings(self, folder: str, files: dict[str, str], ids: dict[str, dict[str, Any]]) -> list[list[Any]]:
        m = sf.measure(files)
        out: list[list[Any]] = []
        rel = f"{folder}/SKILL.md"
        for rid, r in ids.items():
            part = r["part"]
            if part in ("name", "description", "body", "file"):
                size = {"name": m["name_len"], "description": m["desc_len"], "body": m["body"], "file": m["file"]}
                value = int(size[part])
                bad = value >= r["value"] if r["comparator"] == "lt" else value > r["value"]
                if bad:
                    out.append([rel, rid, value])
            elif part == "name_charset":
                allowed = "a-z0-9-" if r["lowercase"] else "A-Za-z0-9-"
                count = len(re.findall(f"[^{allowed}]", str(m["name"])))
                if count:
                    out.append([rel, rid, count])
            elif part == "name_pattern":
                if not re.fullmatch(r["pattern"], str(m["name"])):
                    out.append([rel, rid, m["name_len"]])
            else:
                for path, text in sorted(files.items()):
                    lines = text.count("\n")
                    if path.startswith("references/") and lines > r["value"] and not sf.has_toc(text):
                        out.append([f"{folder}/{path}", rid, lines])
        return out

    def _excerpt(self, text: SkillText, rules: list[dict[str, Any]]) -> str:
        out = [f"# {text.name}: skill folder rules", "", "Quoted from our playbook, each line as written.", ""]
        for i, r in enumerate(rules):
            heading = text.heading_above(r["file"], r["line"])
            out += [f"## R{i + 1} ({r['file']}, under “{heading}”)" if heading else f"## R{i + 1} ({r['file']})",
                    "", *text.block(r["file"], r["line"]), ""]
        return "\n".join(out).rstrip() + "\n"

    def _instruction(self, inp: ShapeInput, ids: dict[str, dict[str, Any]], doc: str) -> tuple[str, list[str]]:
        """The instruction, and the sentences in it that state what the verifier grades."""
        each = [f"{rid}: “{r['sentence'].rstrip('.')}.” We read it as: {_meaning(r)}." for rid, r in ids.items()]
        rules = " ".join(each)
        parts = {r["part"] for r in ids.values()}
        conv = ["A file's lines are its newline-terminated lines."]
        if parts & {"body", "file"}:
            conv.append("The front matter is everything from the first `---` line to the next one; the body is "
                        "every line after that closing `---`.")
        if "description" in parts:
            conv.append("A description's length is that of its value as YAML reads it: without its quotes, and a "
                        "folded block (`description: >-` and its indented lines) joined with single spaces.")
        if "toc" in parts:
            conv.append("A table of contents is a `## Contents` heading within a file's first 10 lines followed by "
                        "at least two list items that link to headings of the file (`- [Title](#anchor)`).")
        request = Request(
            situation=f"We keep our team's skills under {ROOT}, one folder per skill, and check them against the "
                      f"rules of our {inp.text.name} playbook before publishing; the rules are quoted in {doc}.",
            rules=rules, conventions=" ".join(conv),
            deliverable=f"Write {OUT} with the header `{HEADER}` and one row per breach (any order): `path` "
                        f"relative to {ROOT} (such as `some-skill/SKILL.md` or `some-skill/references/api.md`), "
                        "`rule` the rule's id and `measured` the number the rule is about, as an integer.",
            ask="Audit the skill folders against the playbook's rules.",
            extra=["Change nothing under the skills folder."],
            hint="The files are small enough to read with Python line by line; count with len() after splitting on "
                 "newlines.")
        s = inp.sample
        return render(request, s.persona, s.tone, s.expertise, inp.seed), [*each, *conv, request.deliverable]

    def _rubric(self, inp: ShapeInput, p: Predicate, ids: dict[str, dict[str, Any]]) -> RubricSpec:
        """Must-do from the metrics; the rules' own polarity for the rest (the generator puts the skill's own
        warnings and advice on these lines first: compose/rubric.complete)."""
        parts = {r["part"] for r in ids.values()}
        # Only the parts in play: a rule on the body, on the description's value, on the name.
        pitfalls = [text for part, text in (("body", "the body's lines, not the whole file's"),
                                            ("description", "the description's value, not its YAML lines"),
                                            ("name", "the name's characters, not the line's"))
                    if part in parts]
        must = [Bullet(f"Report every file that breaks {', '.join(ids)} with the rule's id, and no compliant one.",
                       "metric:findings"),
                Bullet("Give each breach the value the rule measures" + (f": {' and '.join(pitfalls)}."
                                                                         if pitfalls else "."), "metric:measured"),
                Bullet("Apply every condition of each rule (its bound and comparator, the part it measures), none "
                       "dropped.", "metric:every_condition")]
        first = next(iter(ids.values()))
        at = f"{first['file']}:{first['line']}"
        limit = next((r for r in ids.values() if r["part"] in ("name", "description", "body", "file")
                      and not r["sentence"].lstrip().startswith("[")), None)
        avoid = [Bullet(f"Passing a file past the limit of “{limit['sentence'].rstrip('.')}” because it is only "
                        "just past it.", f"{limit['file']}:{limit['line']}")] if limit else []
        toc = next((r for r in ids.values() if r["part"] == "toc"), None)
        if toc:
            avoid.append(Bullet(f"Reporting a reference file of exactly {toc['value']} lines, or a longer one that "
                                "starts with a contents list.", f"{toc['file']}:{toc['line']}"))
        avoid = avoid or [Bullet(f"Reporting a file that meets “{first['sentence'].rstrip('.')}”.", at)]
        named = [x for part, x in (("body", "the body"), ("description", "the description's value"),
                                   ("name", "the name")) if part in parts]
        practice = [Bullet(f"Measure the part each rule names ({', '.join(named)}) rather than the whole file.", at)
                    if named else Bullet("Measure each file exactly as the rule counts it.", at)]
        return RubricSpec(must, avoid, practice)

    def _cheats(self, folders: list[sf.SkillFolder], ids: dict[str, dict[str, Any]]) -> dict[str, str]:
        every = [f"{f.name}/SKILL.md,{rid},0" for f in folders for rid in ids]
        return {"every_file_every_rule.sh": cheats.rows(OUT, HEADER, every),
                "header_only.sh": cheats.header_only(OUT, HEADER)}

    def _challenges(self, inp: ShapeInput) -> list[Challenge]:
        text = {"boundary": ("files exactly at and one past each limit", ["findings"]),
                "rule_in_docs": ("each rule's bound is only in the quoted playbook lines", ["measured"]),
                "multi_rule": ("several rules on different parts of the same files", ["findings"])}
        out = [Challenge(pattern="", dimension="", effect=e, instantiation=text[e][0], tested_by=text[e][1])
               for e in inp.effects if e in text]
        return out or [Challenge(pattern="", dimension="", effect="boundary", instantiation=text["boundary"][0],
                                 tested_by=["findings"])]
