"""repair_debug / regression_suite: fix a broken awk report script; hidden cases grade it (minimal image)."""

from __future__ import annotations

import hashlib

from skill2env_dagster.tasks.recipes.base import Brief, Design, RecipeInput, Rubric, reward_prelude
from skill2env_dagster.tasks.recipes.fixtures import Records, make_records

METRICS = ["sample_output", "hidden_cases", "header_only_input"]
STATUSES = ["ok", "ok", "ok", "void", "hold"]
# sed expressions that undo the planted bugs; wrong.sh applies all but the status fix.
FIX_FS = ["\"s/-F';'/-F','/\"", "'s/NR >= 1/NR > 1/'", "'s/+= \\$3/+= $4/'", "'s/sort -r$/sort/'"]
FIX_STATUS = ["'s/\\$5 != \"void\"/$5 == \"ok\"/'"]


def _script(fs: str, first: str, cond: str, col: str, sort: str, tool: str, rec: Records) -> str:
    return f"""#!/bin/bash
# {tool}: per-{rec.category_col} report of a {rec.item_col} log (columns: {",".join(rec.header())}).
# Prints one line per {rec.category_col}: name, number of ok rows, total {rec.measure_col}; sorted by name.
set -euo pipefail
file="${{1:?usage: {tool} FILE.csv}}"
awk -F'{fs}' '{first} && {cond} {{ n[$2]++; t[$2] += {col} }}
END {{ for (c in n) printf "%s\\t%d\\t%d\\n", c, n[c], t[c] }}' "$file" | LC_ALL=C sort {sort}
"""


def _case(inp: RecipeInput, rec: Records, salt: str, n: int) -> tuple[str, str]:
    """(csv text, expected output) for one case; every case holds a 'hold' row so the status bug shows."""
    rng = inp.rng(salt)
    items = [r[2] for r in rec.rows]
    rows = [(f"r{i + 1:03d}", rng.choice(rec.categories), rng.choice(items), rng.randint(1, 90), rng.choice(STATUSES))
            for i in range(n)]
    rows[0] = (*rows[0][:4], "hold")
    rows[1] = (*rows[1][:4], "ok")
    agg: dict[str, list[int]] = {}
    for _id, cat, _item, val, st in rows:
        if st == "ok":
            agg.setdefault(cat, [0, 0])
            agg[cat][0] += 1
            agg[cat][1] += val
    text = ",".join(rec.header()) + "\n" + "".join(f"{a},{b},{c},{d},{e}\n" for a, b, c, d, e in rows)
    return text, "".join(f"{c}\t{n}\t{t}\n" for c, (n, t) in sorted(agg.items()))


class RepairRecipe:
    name = "awk_report_fix"
    archetype = "repair_debug"
    verifier = "regression_suite"
    image = "minimal"

    def design(self, inp: RecipeInput) -> Design:
        rec = make_records(inp, 8, "repair:sample")
        tool = f"{rec.category_col.replace('_', '-')}-report"
        broken = dict(fs=";", first="NR >= 1", cond='$5 != "void"',
                      col="$3" if inp.level >= 1 else "$4", sort="-r" if inp.level >= 2 else "")
        sample_in, sample_out = _case(inp, rec, "repair:sample", 8)
        cases = [_case(inp, rec, f"repair:hidden{i}", 6 + 3 * i) for i in range(4)]
        tests = {"test.sh": self._test(tool, len(cases), hashlib.sha256(sample_out.encode()).hexdigest())}
        for i, (text, out) in enumerate(cases):
            tests[f"cases/case{i}.csv"], tests[f"cases/case{i}.out"] = text, out
        tests["cases/header_only.csv"] = ",".join(rec.header()) + "\n"
        return Design(
            recipe=self.name, archetype=self.archetype, verifier=self.verifier, image=self.image,
            env_files={f"app/bin/{tool}": _script(**broken, tool=tool, rec=rec),
                       "app/samples/sample.csv": sample_in, "app/samples/sample.expected": sample_out},
            docker_lines=["COPY app/ /app/", f"RUN chmod +x /app/bin/{tool}"],
            brief=self._brief(inp, rec, tool, sample_out.splitlines()[0]),
            tests=tests, metrics=METRICS, rubric=self._rubric(inp, rec, tool),
            solve=self._fix(tool, FIX_FS + FIX_STATUS),
            wrong=self._fix(tool, FIX_FS),
            grounded_on=[rec.origin],
        )

    def _brief(self, inp: RecipeInput, rec: Records, tool: str, example: str) -> Brief:
        return Brief(
            topic=f"the {tool} script",
            situation=f"/app/bin/{tool} is supposed to summarise a {rec.item_col.replace('_', ' ')} log per "
                      f"{rec.category_col} for the {inp.workflow.name.replace('-', ' ')} checks, but its output "
                      "is wrong and nobody trusts the numbers.",
            ask=f"fix /app/bin/{tool} so it reports correctly",
            rules=[f"It takes one CSV file with the header {','.join(rec.header())} and prints, for each "
                   f"{rec.category_col} that has rows with status ok, a tab-separated line with the name, the "
                   f"number of ok rows and the sum of their {rec.measure_col}, sorted by name.",
                   "Rows with any other status (void, hold) do not count, and a file with only the header must "
                   "print nothing and succeed.",
                   "Keep the script at the same path with the same calling convention; it will be run on other logs."],
            deliverable="/app/samples/sample.csv with /app/samples/sample.expected shows one input and the exact "
                        "output the fixed script must print.",
            example=example,
            novice_hint="The script is bash around a single awk program; run it on the sample to see the problem.",
        )

    def _test(self, tool: str, n_cases: int, sample_hash: str) -> str:
        return reward_prelude(METRICS) + f"""TOOL=/app/bin/{tool}
[ -f "$TOOL" ] || exit 0
run() {{ if [ -x "$TOOL" ]; then timeout 20 "$TOOL" "$1"; else timeout 20 bash "$TOOL" "$1"; fi; }}
passes() {{ local out; out=$(run "$1" 2>/dev/null) || return 1; [ "$out" = "$(cat "$2")" ]; }}
sample=$(run /app/samples/sample.csv 2>/dev/null) && \
  [ "$(printf '%s\n' "$sample" | sha256sum | cut -d' ' -f1)" = "{sample_hash}" ] && m_sample_output=1
ok=0
for i in $(seq 0 {n_cases - 1}); do passes /tests/cases/case$i.csv /tests/cases/case$i.out && ok=$((ok + 1)); done
m_hidden_cases=$(ratio "$ok" {n_cases})
out=$(run /tests/cases/header_only.csv 2>/dev/null) && [ -z "$out" ] && m_header_only_input=1
"""

    def _fix(self, tool: str, edits: list[str]) -> str:
        """Patch the shipped script in place (an edit, like a person would make; no copy of its text)."""
        args = " ".join(f"-e {e}" for e in edits)
        return f"#!/bin/bash\nset -euo pipefail\nsed -i {args} /app/bin/{tool}\nchmod +x /app/bin/{tool}\n"

    def _rubric(self, inp: RecipeInput, rec: Records, tool: str) -> Rubric:
        return Rubric(
            must_do=[f"Make {tool} print the correct per-{rec.category_col} lines for any log",
                     "Count only rows with status ok", "Print nothing for a header-only file and exit 0"],
            must_avoid=["Hard-coding the sample's expected output", "Changing the script's path or arguments",
                        "Editing the sample files"],
            best_practice=[f"Reproduce the failure on the sample before changing {tool}",
                           f"Keep the {inp.grounding.skill_name} style: small, readable awk", "Re-run the sample after each fix"],
        )

