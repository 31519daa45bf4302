"""Canned step replies for the model-backed generator: a complete small task (sum ok readings per sensor), served
by the loopback fake OpenAI server. `StepResponder` answers by the schema the client asks for and records which
steps were called; `broken_first_solution` makes the first solve.sh wrong so the repair loop runs."""

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

REPLIES: dict[str, dict[str, Any]] = {
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
        return json.dumps(self.replies[name])
