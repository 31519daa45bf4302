"""service_runtime / protocol_conformance: import records through a local stub of the skill's HTTP API.

The stub keeps the contract the skill documents (collection path and record fields from its endpoint lines and
JSON examples); the verifier reads the stub's persisted state, so it grades the outcome, not the calls made.
"""

from __future__ import annotations

import json
import re

from skill2env_dagster.tasks.recipes.base import (
    PY_CHECK_HEAD,
    Brief,
    Design,
    RecipeInput,
    Rubric,
    python_reward_prelude,
    slug,
)
from skill2env_dagster.tasks.recipes.fixtures import make_records
from skill2env_dagster.tasks.standins.http_stub import STATE_FILE, StubContract, stub_service

METRICS = ["records_created", "fields_exact", "clean_import"]


def _schema(inp: RecipeInput) -> tuple[str, list[tuple[str, object]], str]:
    """(collection path, [(field, example value)], origin) from the skill's API docs, else from its vocabulary."""
    posts = [p for m, p in inp.grounding.endpoints if m == "POST" and "{" not in p]
    objects = [o for o in inp.grounding.json_objects
               if sum(isinstance(v, int) and not isinstance(v, bool) for v in o.values()) >= 1
               and sum(isinstance(v, str) for k, v in o.items() if k != "id") >= 2]
    if posts and objects:
        obj = max(objects, key=len)
        fields = [(k, v) for k, v in obj.items() if k != "id" and isinstance(v, (str, int)) and not isinstance(v, bool)
                  and re.fullmatch(r"[a-z][a-z0-9_]{0,30}", k) and not re.search(r"(_at|date|time)$", k)]
        if len(fields) >= 3:
            return posts[0].rstrip("/"), fields[:5], "skill API docs"
    rec = make_records(inp, 3, "service:schema")
    return (f"/api/v1/{slug(rec.item_col)}s", [("name", "x"), (rec.category_col, rec.categories[0]),
                                               (rec.measure_col, 1)], "vocabulary")


def _values(inp: RecipeInput, fields: list[tuple[str, object]], n: int) -> list[dict]:
    rng = inp.rng("service:values")
    words = inp.grounding.words(8, rng)
    rows = []
    for i in range(n):
        row: dict[str, object] = {}
        for k, example in fields:
            if isinstance(example, int):
                row[k] = rng.randint(1, 20)
            elif m := re.fullmatch(r"([A-Z]+)-(\d+)", str(example)):
                row[k] = f"{m.group(1)}-{rng.randint(10 ** (len(m.group(2)) - 1), 10 ** len(m.group(2)) - 1)}"
            else:
                row[k] = f"{rng.choice(words)}-{i + 1:02d}" if k == fields[0][0] else rng.choice(words)
        rows.append(row)
    key = fields[0][0]
    unique = list({r[key]: r for r in rows}.values())
    return unique


def _statuses(n: int, rng) -> list[str]:
    """Inbox statuses with at least one archived and one new row, so the archive rule always matters."""
    statuses = ["archived" if rng.random() < 0.25 else "new" for _ in range(n)]
    for status in ("archived", "new"):
        if status not in statuses:
            statuses[rng.randrange(n)] = status
    return statuses


def _pad_one(cells: list[list[str]], lines: list[dict], names: list[str], ints: list[str], expected: list[dict],
             rng) -> None:
    """Make sure one text cell of a row that must be imported carries stray spaces (ints are parsed anyway)."""
    texts = [i for i, k in enumerate(names) if k not in ints]
    wanted = [j for j, r in enumerate(lines) if r.get("status") == "new" and any(r is e or r == dict(e, status="new")
                                                                                 for e in expected)]
    if not texts or not wanted:
        return
    if any(cells[j][i] != cells[j][i].strip() for j in wanted for i in texts):
        return
    j, i = rng.choice(wanted), rng.choice(texts)
    cells[j][i] = f" {cells[j][i]} "


class ServiceRecipe:
    name = "api_import_stub"
    archetype = "service_runtime"
    verifier = "protocol_conformance"
    image = "python"

    def design(self, inp: RecipeInput) -> Design:
        collection, fields, origin = _schema(inp)
        names = [k for k, _ in fields]
        ints = [k for k, v in fields if isinstance(v, int)]
        key = names[0]
        rows = _values(inp, fields, 12 + 2 * inp.level)
        seed, inbox = rows[:3], rows[3:]
        rng = inp.rng("service:status")
        statuses = _statuses(len(inbox), rng)
        dupes = [dict(s) for s in seed[:1 + (inp.level >= 1)]]
        expected = [r for r, s in zip(inbox, statuses) if s == "new"]
        lines = [dict(r, status=s) for r, s in zip(inbox, statuses)] + [dict(d, status="new") for d in dupes]
        rng.shuffle(lines)
        cells = [[self._cell(str(r[k]), inp.level, rng) for k in names + ["status"]] for r in lines]
        if inp.level >= 1:
            _pad_one(cells, lines, names, ints, expected, rng)
        csv_text = ",".join(names + ["status"]) + "\n" + "".join(",".join(c) + "\n" for c in cells)
        cli = f"{slug(collection.rsplit('/', 1)[-1], 'svc')}-cli"
        contract = StubContract(collection, names, names, ints, [{"id": f"R-{i + 1}", **s} for i, s in enumerate(seed)])
        files, docker = stub_service(contract, cli)
        files["app/inbox/import.csv"] = csv_text
        files["app/docs/API.md"] = self._api_doc(contract, cli)
        return Design(
            recipe=self.name, archetype=self.archetype, verifier=self.verifier, image=self.image,
            env_files=files, docker_lines=["COPY app/ /app/", *docker],
            brief=self._brief(inp, collection, key, cli, inp.level),
            tests={"test.sh": python_reward_prelude(METRICS), "check.py": self._check(expected, key, ints, names)},
            metrics=METRICS, rubric=self._rubric(inp, key),
            solve=self._solve(cli, collection, names, ints, key, careful=True),
            wrong=self._solve(cli, collection, names, ints, key, careful=False),
            grounded_on=[origin],
        )

    @staticmethod
    def _cell(text: str, level: int, rng) -> str:
        return f" {text} " if level >= 1 and rng.random() < 0.3 else text

    def _api_doc(self, c: StubContract, cli: str) -> str:
        return (f"# Local service contract\n\nBase URL: http://127.0.0.1:{c.port}\n\n"
                f"- `GET /health` → 200\n- `GET {c.collection}` → 200 `{{\"items\": [...]}}` (filter with ?field=value)\n"
                f"- `GET {c.collection}/<id>` → 200 record, 404 unknown\n"
                f"- `POST {c.collection}` with a JSON object of exactly the fields {', '.join(c.fields)} "
                f"(integers: {', '.join(c.integers) or 'none'}) → 201 record with a new id; 422 on missing, "
                f"unknown or mistyped fields\n- `DELETE {c.collection}/<id>` → 204\n\n"
                f"`{cli}` on PATH wraps these calls (`{cli} start | list | get ID | create k=v ... | delete ID`); "
                f"`{cli} start` brings the service up if it is not answering.\n")

    def _brief(self, inp: RecipeInput, collection: str, key: str, cli: str, level: int) -> Brief:
        rules = ["Rows marked archived must not be sent, and a row whose " + key + " already exists in the service "
                 "must not be created a second time.",
                 "Each created record must carry exactly the row's values, with integer fields sent as JSON numbers."]
        if level >= 1:
            rules.append("Some cells were pasted with stray spaces around them; the service should receive the "
                         "trimmed values.")
        return Brief(
            topic=f"the {collection.rsplit('/', 1)[-1]} import",
            situation=f"{inp.skill.description or inp.grounding.skill_name} For the "
                      f"{inp.workflow.name.replace('-', ' ')} task, a batch in /app/inbox/import.csv has to get into "
                      f"the local service at http://127.0.0.1:8080{collection}.",
            ask="load the batch into the service through its API",
            rules=rules,
            deliverable=f"The contract is in /app/docs/API.md and `{cli}` on PATH wraps the calls; the records "
                        "in the service afterwards are what counts.",
            example=f"{cli} create {key}=...",
            novice_hint=f"Run `{cli} start` first if the service does not answer.",
        )

    def _check(self, expected: list[dict], key: str, ints: list[str], names: list[str]) -> str:
        return PY_CHECK_HEAD + f"""

EXPECTED = {json.dumps(expected)}
KEY = {key!r}
SEED_IDS = ["R-1", "R-2", "R-3"]
STATE = pathlib.Path({STATE_FILE!r})


def main():
    try:
        records = json.loads(STATE.read_text())["records"]
    except (OSError, ValueError, KeyError, TypeError):
        records = []
    created = [r for r in records if isinstance(r, dict) and r.get("id") not in SEED_IDS]
    want = {{e[KEY]: e for e in EXPECTED}}
    keys = [r.get(KEY) for r in created]
    present = [k for k in want if k in keys]
    exact = [k for k in want if any({{f: r.get(f) for f in want[k]}} == want[k] for r in created)]
    good = len(set(present))
    bad = len(created) - good
    emit({{
        "records_created": len(present) / len(want),
        "fields_exact": len(exact) / len(want),
        "clean_import": good / (good + bad) if created else 0.0,
    }})


main()
"""

    def _solve(self, cli: str, collection: str, names: list[str], ints: list[str], key: str, careful: bool) -> str:
        return f"""#!/bin/bash
set -euo pipefail
{cli} start
python3 - <<'PY'
import csv, json, urllib.request
BASE = "http://127.0.0.1:8080{collection}"
INTS = {ints!r}
CAREFUL = {careful!r}
existing = {{r[{key!r}] for r in json.load(urllib.request.urlopen(BASE))["items"]}}
for row in csv.DictReader(open("/app/inbox/import.csv")):
    row = {{k: v.strip() if CAREFUL else v for k, v in row.items()}}
    if CAREFUL and (row.pop("status") == "archived" or row[{key!r}] in existing):
        continue
    row.pop("status", None)
    body = {{k: int(v) if k in INTS else v for k, v in row.items()}}
    payload = json.dumps(body).encode()
    urllib.request.urlopen(urllib.request.Request(BASE, payload, {{"Content-Type": "application/json"}})).read()
    existing.add(row[{key!r}])
PY
"""

    def _rubric(self, inp: RecipeInput, key: str) -> Rubric:
        return Rubric(
            must_do=["Create one record per new, non-archived row through the API",
                     "Send integer fields as JSON numbers and trimmed text", f"Skip rows whose {key} already exists"],
            must_avoid=["Importing archived rows", "Creating duplicates", "Editing the service's state file directly"],
            best_practice=[f"Follow the {inp.grounding.skill_name} contract: read the API doc before calling",
                           "Check existing records first so the import is idempotent", "Treat 4xx answers as errors to fix, not to retry"],
        )
