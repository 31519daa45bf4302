"""transform_convert / exact_state: summarise a CSV fixture into a CSV report (minimal image, awk verifier)."""

from __future__ import annotations

from skill2env_dagster.tasks.recipes.base import Brief, Design, RecipeInput, Rubric, reward_prelude, slug
from skill2env_dagster.tasks.recipes.fixtures import Records, make_records

METRICS = ["header_ok", "rows_correct", "order_correct"]


def _messy(rec: Records, level: int, inp: RecipeInput) -> list[list[str]]:
    """Input lines as written: with level ≥ 1 untidy category cells, with level ≥ 2 superseded duplicate ids.

    Each rule the instruction states is exercised at least once on an ok row (the rows that count), so a
    solution that skips the rule always gets a different report: random draws alone left some fixtures with
    nothing to normalise or supersede (make_records already guarantees a void row).
    """
    rng = inp.rng("transform:messy")
    ok_rows = [i for i, r in enumerate(rec.rows) if r[4] == "ok"]
    messy = {i for i in range(len(rec.rows)) if level >= 1 and rng.random() < 0.4}
    superseded = {i for i in range(len(rec.rows)) if level >= 2 and rng.random() < 0.3}
    if level >= 1 and not messy & set(ok_rows):
        messy.add(rng.choice(ok_rows))
    if level >= 2 and not superseded & set(ok_rows):
        superseded.add(rng.choice(ok_rows))
    lines = []
    for i, (rid, cat, item, val, status) in enumerate(rec.rows):
        shown = rng.choice([f" {cat}", f"{cat.upper()}", f"{cat.title()} "]) if i in messy else cat
        if shown.strip().lower() == shown:  # upper()/title() are no-ops on a category without letters
            shown = f" {cat}" if i in messy else shown
        if i in superseded:  # an earlier, superseded version of this row
            lines.append([rid, rng.choice(rec.categories), item, str(rng.randint(100, 200)), "ok"])
        lines.append([rid, shown, item, str(val), status])
    return lines


def expected(rec: Records) -> list[tuple[str, int, int]]:
    rows: dict[str, tuple[int, int]] = {}
    for _rid, cat, _item, val, status in rec.rows:
        if status == "ok":
            n, t = rows.get(cat, (0, 0))
            rows[cat] = (n + 1, t + val)
    return sorted(((c, n, t) for c, (n, t) in rows.items()), key=lambda r: (-r[2], r[0]))


class TransformRecipe:
    name = "csv_summary"
    archetype = "transform_convert"
    verifier = "exact_state"
    image = "minimal"

    def design(self, inp: RecipeInput) -> Design:
        rec = make_records(inp, 10 + 4 * inp.level, "transform")
        data = f"data/{slug(rec.item_col)}_log.csv"
        out = f"out/{rec.category_col}_summary.csv"
        header = f"{rec.category_col},rows,total_{rec.measure_col}"
        exp = expected(rec)
        lines = [",".join(rec.header())] + [",".join(r) for r in _messy(rec, inp.level, inp)]
        return Design(
            recipe=self.name, archetype=self.archetype, verifier=self.verifier, image=self.image,
            env_files={f"app/{data}": "\n".join(lines) + "\n"},
            docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            brief=self._brief(inp, rec, data, out, header, exp),
            tests={"test.sh": self._test(out, header),
                   "expected.csv": header + "\n" + "".join(f"{c},{n},{t}\n" for c, n, t in exp)},
            metrics=METRICS,
            rubric=self._rubric(inp, rec),
            solve=self._solve(data, out, header, keep_status=True, normalise=True),
            wrong=self._solve(data, out, header, keep_status=False, normalise=inp.level == 0),
            grounded_on=[rec.origin],
        )

    def _brief(self, inp, rec: Records, data, out, header, exp) -> Brief:
        rules = [
            "Only rows whose status is ok count; void rows are cancelled entries and must be left out.",
            f"Each line of the report gives the {rec.category_col}, how many ok rows it has, and the sum of their "
            f"{rec.measure_col}, ordered by that total from largest to smallest (ties by {rec.category_col} name).",
        ]
        if inp.level >= 1:
            rules.append(f"The {rec.category_col} cells were typed by hand, so stray spaces and capitals must be "
                         f"normalised (trim and lower-case) before grouping.")
        if inp.level >= 2:
            rules.append("Some ids appear more than once because rows were corrected later; only the last line for "
                         "an id is valid.")
        c, n, t = exp[0]
        return Brief(
            topic=f"the {rec.category_col} summary",
            situation=f"We keep a log of {rec.item_col.replace('_', ' ')} entries in /app/{data} and need the "
                      f"per-{rec.category_col} totals of {rec.measure_col} for the {inp.workflow.name.replace('-', ' ')} review.",
            ask=f"produce a summary of /app/{data} grouped by {rec.category_col}",
            rules=rules,
            deliverable=f"Write it as CSV to /app/{out} with the header line `{header}` and no other columns.",
            example=f"{header}\n{c},{n},{t}",
            novice_hint="Standard shell tools such as awk, sort and grep are available in the container.",
        )

    def _test(self, out: str, header: str) -> str:
        return reward_prelude(METRICS) + f"""OUT=/app/{out}
EXP=/tests/expected.csv
[ -f "$OUT" ] || exit 0
tr -d '\\r' < "$OUT" > /tmp/got.csv
[ "$(head -n 1 /tmp/got.csv)" = "{header}" ] && m_header_ok=1
want=$(( $(wc -l < "$EXP") - 1 ))
got=$(tail -n +2 /tmp/got.csv | grep -c . || true)
hits=$(tail -n +2 /tmp/got.csv | sort -u | grep -cxF -f <(tail -n +2 "$EXP") || true)
den=$(( got > want ? got : want ))
m_rows_correct=$(ratio "$hits" "$den")
same=$(awk 'NR == FNR {{ e[FNR] = $0; next }} FNR > 1 && e[FNR] == $0 {{ c++ }} END {{ print c + 0 }}' "$EXP" /tmp/got.csv)
m_order_correct=$(ratio "$same" "$den")
"""

    def _solve(self, data: str, out: str, header: str, keep_status: bool, normalise: bool) -> str:
        norm = 'gsub(/^[ \\t]+|[ \\t]+$/, "", c); c = tolower(c)' if normalise else ""
        cond = 'st[id] == "ok"' if keep_status else "1"
        return f"""#!/bin/bash
set -euo pipefail
mkdir -p /app/out
awk -F, 'NR > 1 {{ id = $1; c = $2; {norm}; cat[id] = c; m[id] = $4; st[id] = $5 }}
END {{ for (id in cat) if ({cond}) {{ n[cat[id]]++; t[cat[id]] += m[id] }}
       for (c in n) print c "," n[c] "," t[c] }}' /app/{data} | LC_ALL=C sort -t, -k3,3nr -k1,1 > /tmp/body.csv
{{ echo "{header}"; cat /tmp/body.csv; }} > /app/{out}
"""

    def _rubric(self, inp: RecipeInput, rec: Records) -> Rubric:
        return Rubric(
            must_do=[f"Report one line per {rec.category_col} with the count and total {rec.measure_col} of ok rows",
                     "Use the exact header and order by total descending, ties by name",
                     "Write the report to the requested path under /app/out"],
            must_avoid=["Counting void rows", "Editing the source log", "Adding extra columns or comment lines"],
            best_practice=[f"Apply the {inp.grounding.skill_name} conventions: normalise keys before grouping",
                           "Check the totals against a quick independent count", "Keep the transformation scripted and repeatable"],
        )
