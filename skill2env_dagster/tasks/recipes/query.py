"""data_query / exact_state: answer questions over a seeded SQLite database (python image, python verifier)."""

from __future__ import annotations

import json

from skill2env_dagster.tasks.recipes.base import (
    PY_CHECK_HEAD,
    Brief,
    Design,
    RecipeInput,
    Rubric,
    python_reward_prelude,
)
from skill2env_dagster.tasks.recipes.fixtures import RESERVED, Records, make_records
from skill2env_dagster.tasks.standins.seeded_db import insert_sql, seeded_db

METRICS = ["aggregate_answer", "ranking_answer", "window_answer"]
DB = "/app/data/records.db"


def _world(inp: RecipeInput) -> tuple[Records, list[tuple], list[tuple], dict]:
    """Items and events, plus void events planted so that ignoring the status filter changes every answer."""
    rec = make_records(inp, 8 + 2 * inp.level, "query")
    rng = inp.rng("query:events")
    items = [(i + 1, f"{r[2]}", r[1]) for i, r in enumerate(rec.rows)]
    events = []
    for n in range(30 + 10 * inp.level):
        item = rng.choice(items)
        events.append((n + 1, item[0], rng.randint(1, 60), "ok" if rng.random() > 0.15 else "void",
                       f"2024-03-{rng.randint(1, 28):02d}"))
    cat_a, cat_b = rec.categories[0], rec.categories[-1]
    day = "2024-03-15"
    planted = [(next(i for i in items if i[2] == cat_a)[0], 40, "2024-03-02"),
               (next(i for i in items if i[2] == cat_b)[0], 7, "2024-03-20")]
    events += [(len(events) + k + 1, item_id, val, "void", d) for k, (item_id, val, d) in enumerate(planted)]
    ranked = sorted(_counts(items, events, ok_only=True).items(), key=lambda kv: (-kv[1], kv[0]))
    every = _counts(items, events, ok_only=False)
    top, runner_up = ranked[0][0], ranked[1][0]
    runner_id = next(i[0] for i in items if i[1] == runner_up)
    for _ in range(max(0, every[top] - every[runner_up] + 1)):  # ignoring status would crown the runner-up
        events.append((len(events) + 1, runner_id, 5, "void", "2024-03-09"))
    ans = _answers(items, events, cat_a, cat_b, day, with_status=True)
    return rec, items, events, {"cat_a": cat_a, "cat_b": cat_b, "day": day, "answers": ans}


def _counts(items, events, ok_only: bool) -> dict[str, int]:
    names = {i[0]: i[1] for i in items}
    counts = {i[1]: 0 for i in items}
    for e in events:
        if e[3] == "ok" or not ok_only:
            counts[names[e[1]]] += 1
    return counts


def _answers(items, events, cat_a, cat_b, day, with_status: bool) -> dict:
    cats = {i[0]: i[2] for i in items}
    names = {i[0]: i[1] for i in items}
    ok = [e for e in events if e[3] == "ok" or not with_status]
    counts: dict[str, int] = {}
    for e in ok:
        counts[names[e[1]]] = counts.get(names[e[1]], 0) + 1
    return {
        "q1": sum(e[2] for e in ok if cats[e[1]] == cat_a),
        "q2": sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0],
        "q3": sum(1 for e in ok if cats[e[1]] == cat_b and e[4] >= day),
    }


class QueryRecipe:
    name = "sqlite_questions"
    archetype = "data_query"
    verifier = "exact_state"
    image = "python"

    def design(self, inp: RecipeInput) -> Design:
        rec, items, events, facts = _world(inp)
        table = rec.item_col if rec.item_col.isidentifier() and rec.item_col not in RESERVED else "items"
        sql = (f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, {rec.category_col} TEXT NOT NULL);\n"
               f"CREATE TABLE events (id INTEGER PRIMARY KEY, {table}_id INTEGER NOT NULL REFERENCES {table}(id), "
               f"{rec.measure_col} INTEGER NOT NULL, status TEXT NOT NULL, day TEXT NOT NULL);\n"
               + insert_sql(table, ["id", "name", rec.category_col], items)
               + insert_sql("events", ["id", f"{table}_id", rec.measure_col, "status", "day"], events))
        env, lines = seeded_db(DB, sql)
        q = self._queries(table, rec, facts)
        return Design(
            recipe=self.name, archetype=self.archetype, verifier=self.verifier, image=self.image,
            env_files=env, docker_lines=lines, brief=self._brief(inp, rec, table, facts),
            tests={"test.sh": python_reward_prelude(METRICS), "check.py": self._check(facts["answers"])},
            metrics=METRICS, rubric=self._rubric(inp, rec),
            solve=self._solve(q, "status = 'ok'"), wrong=self._solve(q, "1 = 1"),
            grounded_on=[rec.origin],
        )

    def _queries(self, table: str, rec: Records, f: dict) -> dict[str, str]:
        j = f"FROM events e JOIN {table} i ON i.id = e.{table}_id WHERE {{cond}}"
        return {
            "q1": f"SELECT COALESCE(SUM(e.{rec.measure_col}), 0) {j} AND i.{rec.category_col} = '{f['cat_a']}'",
            "q2": f"SELECT i.name {j} GROUP BY i.name ORDER BY COUNT(*) DESC, i.name LIMIT 1",
            "q3": f"SELECT COUNT(*) {j} AND i.{rec.category_col} = '{f['cat_b']}' AND e.day >= '{f['day']}'",
        }

    def _brief(self, inp: RecipeInput, rec: Records, table: str, f: dict) -> Brief:
        return Brief(
            topic=f"{rec.measure_col} figures for the {f['cat_a']} and {f['cat_b']} {rec.category_col}s",
            situation=f"The SQLite database at {DB} holds our {table.replace('_', ' ')} catalogue and the events "
                      f"logged against it for the {inp.workflow.name.replace('-', ' ')} work.",
            ask="answer three questions from that database",
            rules=[f"First, the total {rec.measure_col} of all events for the {f['cat_a']} {rec.category_col}; "
                   f"second, the name of the {table.replace('_', ' ')} with the most events (alphabetically first "
                   f"on a tie); third, how many events the {f['cat_b']} {rec.category_col} had on or after "
                   f"{f['day']}.",
                   "Events with status void were cancelled and never count."],
            deliverable='Put the answers in /app/answers.json as {"q1": <number>, "q2": "<name>", "q3": <number>}.',
            example='{"q1": 123, "q2": "some-name", "q3": 4}',
            novice_hint="Python 3 with its sqlite3 module is installed; the schema is in the database itself.",
        )

    def _check(self, answers: dict) -> str:
        return PY_CHECK_HEAD + f"""

EXPECTED = {json.dumps(answers)}


def same(got, want):
    if isinstance(want, str):
        return isinstance(got, str) and got.strip() == want
    try:
        return abs(float(got) - float(want)) < 1e-6
    except (TypeError, ValueError):
        return False


def main():
    try:
        got = json.loads(pathlib.Path("/app/answers.json").read_text())
    except (OSError, ValueError):
        got = {{}}
    if not isinstance(got, dict):
        got = {{}}
    score = {{q: 1.0 if same(got.get(q), want) else 0.0 for q, want in EXPECTED.items()}}
    emit({{"aggregate_answer": score["q1"], "ranking_answer": score["q2"], "window_answer": score["q3"]}})


main()
"""

    def _solve(self, queries: dict[str, str], cond: str) -> str:
        body = json.dumps({k: v.replace("{cond}", cond) for k, v in queries.items()}, indent=1)
        return f"""#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json, sqlite3
con = sqlite3.connect("{DB}")
queries = {body}
answers = {{k: con.execute(q).fetchone()[0] for k, q in queries.items()}}
open("/app/answers.json", "w").write(json.dumps(answers))
PY
"""

    def _rubric(self, inp: RecipeInput, rec: Records) -> Rubric:
        return Rubric(
            must_do=["Answer all three questions from the database contents",
                     "Exclude void events from every figure", "Write valid JSON with keys q1, q2, q3"],
            must_avoid=["Modifying the database", "Guessing values without querying", "Returning answers as prose"],
            best_practice=[f"Follow the {inp.grounding.skill_name} approach: inspect the schema before querying",
                           "Cross-check the join between events and items", "Keep the queries in a reusable script"],
        )
