"""Canned step replies for the model-backed generator: a complete small task (sum ok readings per sensor), served
by the loopback fake OpenAI server. `StepResponder` answers by the schema the client asks for and records which
steps were called; `broken_first_solution` makes the first solve.sh wrong so the repair loop runs. The blueprint
reply cites the first skill line and pattern the request's schema offers; the cheats are honest shortcuts that
the canned verifier must see through (`PASSING_CHEAT` is one it cannot: the visible answer, hard-coded)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.random_replies import request_schema

READINGS = "sensor,value,status\nalpha,4,ok\nbeta,7,ok\nalpha,5,void\nbeta,1,ok\ngamma,9,void\nalpha,2,ok\n"
EXPECTED = "alpha,6\nbeta,8\n"

TEST_SH = r"""#!/bin/bash
mkdir -p /logs/verifier
has=0; rows=0
write() { printf '{"file_present": %s, "rows_correct": %s}\n' "$has" "$rows" > /logs/verifier/reward.json; }
trap write EXIT
OUT=/app/out/totals.csv
[ -f "$OUT" ] || exit 0
extra=$(sort -u "$OUT" | grep . | grep -cvxF -f /tests/expected.csv || true)
[ "$extra" -eq 0 ] && has=1  # the file holds no row that is not a right answer
want=$(grep -c . /tests/expected.csv)
hit=$(sort -u "$OUT" | grep -cxF -f /tests/expected.csv || true)
got=$(grep -c . "$OUT" || true)
den=$(( got > want ? got : want ))
rows=$(awk -v n="$hit" -v d="$den" 'BEGIN { printf "%.4f", (d > 0 ? n / d : 0) }')
"""

SOLVE = """#!/bin/bash
set -euo pipefail
mkdir -p /app/out
awk -F, 'NR > 1 && $3 == "ok" { t[$1] += $2 } END { for (s in t) print s "," t[s] }' /app/data/readings.csv \\
  | LC_ALL=C sort > /app/out/totals.csv
"""
WRONG = SOLVE.replace(' && $3 == "ok"', "")
BROKEN = SOLVE.replace("$2", "$3")

CHEATS = {
    "header_only": "#!/bin/bash\nmkdir -p /app/out\necho 'sensor,total' > /app/out/totals.csv\n",
    "every_sensor_every_reading": "#!/bin/bash\nmkdir -p /app/out\nawk -F, 'NR > 1 { t[$1] += $2 } END { for (s "
                                  "in t) print s \",\" t[s] }' /app/data/readings.csv > /app/out/totals.csv\n",
}
PASSING_CHEAT = {"hard_coded_answer": "#!/bin/bash\nmkdir -p /app/out\nprintf 'alpha,6\\nbeta,8\\n' > "
                                      "/app/out/totals.csv\n"}
BLUEPRINT: dict[str, Any] = {
    "objective": "Per-sensor totals of the ok readings only, written as a sorted two-column CSV without header.",
    "rules": [{"kind": "format", "subject": "log lines", "statement": "Keep only records whose status is ok.",
               "source": ""}],
    "challenges": [{"pattern": "", "instantiation": "void readings sit between the ok ones of the same sensor",
                    "tested_by": ["rows_correct"]}],
    "environment_facts": ["/app/data/readings.csv: sensor,value,status with ok and void rows"],
    "boundary": {"stated": ["output path and format", "void readings do not count"],
                 "discover": ["which sensors appear and how many readings each has"]},
    "acceptance": [{"metric": "file_present", "checks": "totals.csv holds no wrong row", "rules": []},
                   {"metric": "rows_correct", "checks": "share of right sensor totals", "rules": ["R1"]}],
    "complexity": {"files_to_read": 1, "dependent_steps": 1, "items": 6},
    "deliverables": ["/app/out/totals.csv"],
}

REPLIES: dict[str, dict[str, Any]] = {
    "BlueprintReply": BLUEPRINT,
    "EnvironmentReply": {"image": "minimal", "dockerfile_lines": ["COPY app/ /app/", "RUN mkdir -p /app/out"],
                         "files": {"app/data/readings.csv": READINGS}},
    "InstructionReply": {"instruction": (
        "Our sensor log in /app/data/readings.csv mixes good readings with voided ones, and I need per-sensor "
        "totals for the weekly review.\n\nPlease write /app/out/totals.csv with one line per sensor, the sensor "
        "name and the sum of its ok readings separated by a comma, sorted by sensor name, with no header. Void "
        "readings were cancelled and must not count.\n")},
    "VerifierReply": {"files": {"test.sh": TEST_SH, "expected.csv": EXPECTED},
                      "metrics": ["file_present", "rows_correct"]},
    "RubricReply": {"must_do": ["Sum only ok readings per sensor"], "must_avoid": ["Counting void readings"],
                    "best_practice": ["Script the aggregation so it can be re-run"]},
    "SolutionReply": {"files": {"solve.sh": SOLVE, "wrong.sh": WRONG}},
    "CheatsReply": {"cheats": CHEATS},
}


def schema_name(body: dict[str, Any]) -> str:
    """The reply model a request asks for: the json_schema format's name, or (JSON mode) the one the schema
    instruction names."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("name", "")
    return str(request_schema(body).get("title", ""))


class StepResponder:
    """Answers each call with the canned reply of the step whose schema was requested."""

    def __init__(self, replies: dict[str, dict[str, Any]] | None = None, broken_first_solution: bool = False):
        self.replies = dict(replies or REPLIES)
        self.broken_first = broken_first_solution
        self.calls: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        name = schema_name(body)
        self.calls.append(name)
        if name == "SolutionReply" and self.broken_first and self.calls.count(name) == 1:
            return json.dumps({"files": {"solve.sh": BROKEN}})
        if name == "BlueprintReply":
            return json.dumps(fill_blueprint(self.replies[name], request_schema(body)))
        return json.dumps(self.replies[name])


def fill_blueprint(reply: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Empty `source` / `pattern` fields get the first value the request's schema allows (its per-task enums)."""
    defs = schema.get("$defs", {})
    source = defs["BlueprintRule"]["properties"]["source"]["enum"][0]
    pattern = defs["BlueprintChallenge"]["properties"]["pattern"]["enum"][0]
    return {**reply, "rules": [{**r, "source": r["source"] or source} for r in reply["rules"]],
            "challenges": [{**c, "pattern": c["pattern"] or pattern} for c in reply["challenges"]]}
