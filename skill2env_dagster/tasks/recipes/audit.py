"""audit_report / evidence_traceability: find planted policy violations in config files (minimal image)."""

from __future__ import annotations

from dataclasses import dataclass, field

from skill2env_dagster.tasks.recipes.base import Brief, Design, RecipeInput, Rubric, reward_prelude

METRICS = ["defects_found", "lines_exact", "precision"]
RULES = {
    "R1": "timeout_seconds must be an integer from 1 to 300",
    "R2": "debug must be false in every file whose name starts with prod-",
    "R3": "every section must set owner",
    "R4": "endpoint must use https://",
    "R5": "retries must be an integer from 0 to 5",
    "R6": "a key may appear only once per section",
}


@dataclass
class Section:
    name: str
    keys: list[tuple[str, str]]
    defect: str | None = None


@dataclass
class ConfFile:
    name: str
    sections: list[Section] = field(default_factory=list)

    def render(self) -> tuple[str, list[tuple[str, int, str]]]:
        """File text and its (file, line, rule) findings, line numbers 1-based."""
        lines = [f"# {self.name} — managed settings"]
        found = []
        for sec in self.sections:
            lines += ["", f"[{sec.name}]"]
            header = len(lines)
            seen: set[str] = set()
            for key, value in sec.keys:
                lines.append(f"{key} = {value}")
                if sec.defect == "R6" and key in seen:
                    found.append((self.name, len(lines), "R6"))
                seen.add(key)
                if sec.defect and sec.defect not in ("R3", "R6") and _violates(sec.defect, key, value):
                    found.append((self.name, len(lines), sec.defect))
            if sec.defect == "R3":
                found.append((self.name, header, "R3"))
        return "\n".join(lines) + "\n", found


_RULE_KEY = {"R1": "timeout_seconds", "R2": "debug", "R4": "endpoint", "R5": "retries"}


def _violates(rule: str, key: str, value: str) -> bool:
    """The planted value sits on the rule's key line (one defect per section, so no other line can match)."""
    return _RULE_KEY.get(rule) == key


def _world(inp: RecipeInput) -> tuple[list[ConfFile], list[str]]:
    rng = inp.rng("audit")
    words = inp.grounding.words(10, rng)
    active = ["R1", "R2", "R3", "R4"] + (["R5"] if inp.level >= 1 else []) + (["R6"] if inp.level >= 2 else [])
    files = [ConfFile(f"prod-{words[0]}.conf"), ConfFile(f"prod-{words[1]}.conf"), ConfFile(f"staging-{words[2]}.conf")]
    for i, w in enumerate(words[3:3 + 4 + inp.level]):
        owner = words[(i + 5) % len(words)]
        keys = [("owner", f"team-{owner}"), ("endpoint", f"https://{w}.internal.example/api"),
                ("timeout_seconds", str(rng.choice([30, 60, 120, 300]))), ("retries", str(rng.randint(0, 5))),
                ("debug", "false")]
        files[i % len(files)].sections.append(Section(w, keys))
    files[2].sections[0].keys[4] = ("debug", "true")  # decoy: allowed outside prod-
    plan = ["R2"] + [active[i % len(active)] for i in range(2 + 2 * inp.level)]
    targets = [s for f in files[:2] for s in f.sections] + [s for s in files[2].sections[1:]]
    rng.shuffle(targets)
    for rule in plan:
        cands = [s for s in targets if s.defect is None and (rule != "R2" or _in_prod(files, s))]
        if cands:
            _plant(cands[0], rule)
    return files, active


def _in_prod(files: list[ConfFile], sec: Section) -> bool:
    return any(sec in f.sections for f in files if f.name.startswith("prod-"))


def _plant(sec: Section, rule: str) -> None:
    sec.defect = rule
    k = dict(sec.keys)
    if rule == "R3":
        sec.keys = [kv for kv in sec.keys if kv[0] != "owner"]
    elif rule == "R6":
        sec.keys.append(("timeout_seconds", k["timeout_seconds"]))
    else:
        key, bad = {"R1": ("timeout_seconds", "900"), "R2": ("debug", "true"),
                    "R4": ("endpoint", k["endpoint"].replace("https://", "http://")), "R5": ("retries", "12")}[rule]
        sec.keys = [(kk, bad if kk == key else v) for kk, v in sec.keys]


AUDITOR = r"""awk -v PRODFILTER=%(prod)s -v R3LINE=%(r3)s '
function endsec() { if (sec != "" && !owner) print sfile "\t" (R3LINE ? sline : 0) "\tR3"; sec = "" }
function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
FNR == 1 { endsec(); file = FILENAME; sub(/.*\//, "", file) }
/^\[/ { endsec(); sec = $0; sline = FNR; sfile = file; owner = 0; split("", seen); next }
/^[ \t]*(#|$)/ { next }
{ eq = index($0, "="); key = trim(substr($0, 1, eq - 1)); val = trim(substr($0, eq + 1))
  if (key in seen) print file "\t" FNR "\tR6"; seen[key] = 1
  if (key == "owner") owner = 1
  if (key == "timeout_seconds" && (val !~ /^[0-9]+$/ || val + 0 < 1 || val + 0 > 300)) print file "\t" FNR "\tR1"
  if (key == "debug" && val == "true" && (!PRODFILTER || file ~ /^prod-/)) print file "\t" FNR "\tR2"
  if (key == "endpoint" && val !~ /^https:\/\//) print file "\t" FNR "\tR4"
  if (key == "retries" && (val !~ /^[0-9]+$/ || val + 0 > 5)) print file "\t" FNR "\tR5" }
END { endsec() }' /app/configs/*.conf"""


class AuditRecipe:
    name = "config_policy_audit"
    archetype = "audit_report"
    verifier = "evidence_traceability"
    image = "minimal"

    def design(self, inp: RecipeInput) -> Design:
        files, active = _world(inp)
        env, expected = {}, []
        for f in files:
            text, found = f.render()
            env[f"app/configs/{f.name}"] = text
            expected += found
        env["app/POLICY.md"] = "# Configuration policy\n\n" + "".join(f"- {r}: {RULES[r]}\n" for r in active)
        exp_text = "".join(f"{a}\t{b}\t{c}\n" for a, b, c in sorted(expected))
        return Design(
            recipe=self.name, archetype=self.archetype, verifier=self.verifier, image=self.image,
            env_files=env, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/audit"],
            brief=self._brief(inp, files, active), tests={"test.sh": self._test(), "expected.tsv": exp_text},
            metrics=METRICS, rubric=self._rubric(inp),
            solve=self._solve(prod=1, r3=1), wrong=self._solve(prod=0, r3=0),
            grounded_on=["vocabulary"],
        )

    def _brief(self, inp: RecipeInput, files: list[ConfFile], active: list[str]) -> Brief:
        names = ", ".join(f.name for f in files)
        return Brief(
            topic="the configuration audit",
            situation=f"Before the {inp.workflow.name.replace('-', ' ')} rollout, the settings in /app/configs "
                      f"({names}) have to be checked against the rules in /app/POLICY.md.",
            ask="audit every configuration file against the policy and record each violation",
            rules=["A violation is reported against the line that breaks the rule; a missing owner is reported on "
                   "the line of its [section] header, and a repeated key on the line of the repeat.",
                   "Only real violations belong in the report — values that are unusual but allowed must not be "
                   "flagged, and the configuration files themselves must stay untouched."],
            deliverable="Write one line per violation to /app/audit/findings.tsv as file name, line number and "
                        "rule id separated by tabs.",
            example=f"{files[0].name}\t7\tR1",
            novice_hint="Line numbers count from 1 and include comments and blank lines.",
        )

    def _test(self) -> str:
        return reward_prelude(METRICS) + """F=/app/audit/findings.tsv
EXP=/tests/expected.tsv
[ -f "$F" ] || exit 0
tr -d '\\r' < "$F" | awk -F'\\t' 'NF >= 3 { f = $1; sub(/.*\\//, "", f); print f "\\t" $2 + 0 "\\t" $3 }' | sort -u > /tmp/got.tsv
planted=$(grep -c . "$EXP")
reported=$(grep -c . /tmp/got.tsv || true)
found=$(awk -F'\\t' 'NR == FNR { k[$1 FS $3] = 1; next } ($1 FS $3) in k { c++ } END { print c + 0 }' /tmp/got.tsv "$EXP")
exact=$(grep -cxF -f /tmp/got.tsv "$EXP" || true)
correct=$(grep -cxF -f "$EXP" /tmp/got.tsv || true)
m_defects_found=$(ratio "$found" "$planted")
m_lines_exact=$(ratio "$exact" "$planted")
m_precision=$(ratio "$correct" "$reported")
"""

    def _solve(self, prod: int, r3: int) -> str:
        return ("#!/bin/bash\nset -euo pipefail\nmkdir -p /app/audit\n"
                + AUDITOR % {"prod": prod, "r3": r3} + " > /app/audit/findings.tsv\n")

    def _rubric(self, inp: RecipeInput) -> Rubric:
        return Rubric(
            must_do=["Report every policy violation with file, line and rule id",
                     "Use the section header line for a missing owner", "Write the report to /app/audit/findings.tsv"],
            must_avoid=["Flagging allowed values such as debug outside prod- files", "Editing the configuration files",
                        "Reporting rules that are not in POLICY.md"],
            best_practice=[f"Apply the {inp.grounding.skill_name} review habit: cite exact evidence for each finding",
                           "Check every rule against every section", "Re-read the policy for scope before flagging"],
        )
