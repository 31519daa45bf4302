"""A deterministic creator agent: a fixed tool-call script per fixture skill, served as a model's turns.

The script for `examples/skillhub/log-triage-awk` builds "the 5xx endpoints with the query string removed"
(SKILL.md:22-23) and walks the whole loop: the blueprint and the world, a solution written too early (refused),
the instruction, tests and rubric, a self-check in the workbench, the gate's pre-freeze check (with
`trial=True`, the default, the whole gate on a copy with the reference solution and the cheats), the freeze, an edit
of test.sh after it (refused), a wrong first solve.sh (the final gate's Oracle fails: a solution repair), the fix,
the whole gate, submit. `weak_first=True` makes the first candidate's verifier blind to the counts (the gate
rejects it after the freeze: verifier_insensitive), so a second candidate, shown that evidence, starts from
scratch with the good script.

Each request carries the whole conversation, so the script picks its turn by counting the assistant messages, and
the candidate by whether the brief mentions a previous one: like a real model, it has no other state.
"""

from __future__ import annotations

import json
from typing import Any

ACCESS_LOG = """10.0.0.1 - - [12/Mar/2024:10:01:02 +0000] "GET /api/cart HTTP/1.1" 200 512 "-" "curl/8.0" 0.120
10.0.0.5 - - [12/Mar/2024:10:02:05 +0000] "POST /api/checkout?retry=1 HTTP/1.1" 502 0 "-" "Mozilla/5.0" 2.290
10.0.0.1 - - [12/Mar/2024:10:02:01 +0000] "POST /api/checkout HTTP/1.1" 502 0 "-" "Mozilla/5.0" 2.310
10.0.0.7 - - [12/Mar/2024:10:02:31 +0000] "GET /api/cart?id=7 HTTP/1.1" 503 0 "-" "Mozilla/5.0" 1.200
10.0.0.2 - - [12/Mar/2024:10:02:59 +0000] "GET /health HTTP/1.1" 200 2 "-" "kube-probe/1.29" 0.003
10.0.0.8 - - [12/Mar/2024:10:03:03 +0000] "POST /api/checkout HTTP/1.1" 504 0 "-" "Mozilla/5.0" 5.000
10.0.0.1 - - [12/Mar/2024:10:03:30 +0000] "POST /api/checkout HTTP/1.1" 499 0 "-" "Mozilla/5.0" -
10.0.0.3 - - [12/Mar/2024:10:03:45 +0000] "GET /api/items?page=3 HTTP/1.1" 500 0 "-" "Mozilla/5.0" 0.900
10.0.0.9 - - [12/Mar/2024:10:03:49 +0000] "GET /api/items HTTP/1.1" 200 1800 "-" "Mozilla/5.0" 0.110
10.0.0.4 - - [12/Mar/2024:10:04:01 +0000] "GET /api/cart HTTP/1.1" 500 0 "-" "curl/8.0" 0.100
"""
EXPECTED = "/api/checkout,3\n/api/cart,2\n/api/items,1\n"
DOCKERFILE = "FROM {minimal}\nWORKDIR /app\nCOPY app/ /app/\nRUN mkdir -p /app/out\n"
INSTRUCTION = (
    "We had a 5xx spike this morning and I need to know which endpoints failed. The access log is in "
    "/app/logs/access.log (nginx combined format).\n\nPlease write /app/out/failing.csv with one line per endpoint "
    "that answered with a 5xx status: the path without its query string, a comma, and how many 5xx responses it "
    "had. No header. Order the lines by count, highest first, and by path for equal counts. A 499 is the client "
    "giving up, not a server error.\n")
TEST_SH = r"""#!/bin/bash
mkdir -p /logs/verifier
ok=0; exact=0
write() { printf '{"endpoints_correct": %s, "list_exact": %s}\n' "$ok" "$exact" > /logs/verifier/reward.json; }
trap write EXIT
OUT=/app/out/failing.csv
[ -s "$OUT" ] || exit 0
want=$(grep -c . /tests/expected.csv)
hit=$(sort -u "$OUT" | grep -cxF -f /tests/expected.csv || true)
got=$(grep -c . "$OUT" || true)
den=$(( got > want ? got : want ))
ok=$(awk -v n="$hit" -v d="$den" 'BEGIN { printf "%.4f", (d > 0 ? n / d : 0) }')
cmp -s "$OUT" /tests/expected.csv && exact=1
"""
# Blind to the counts: a path listed is a path right.
WEAK_TEST_SH = TEST_SH.replace('hit=$(sort -u "$OUT" | grep -cxF -f /tests/expected.csv || true)',
                               'hit=$(cut -d, -f1 "$OUT" | sort -u | grep -cxF -f <(cut -d, -f1 /tests/expected.csv)'
                               ' || true)').replace('cmp -s "$OUT" /tests/expected.csv && exact=1',
                                                    '[ "$hit" -eq "$want" ] && exact=1')
RUBRIC = ("## Must-do\n- Count only 5xx responses per path with the query string removed\n## Must-avoid\n"
          "- Counting 499 client aborts as server errors\n## Best-practice\n"
          "- Strip the query string before grouping, as the triage procedure says\n")
SOLVE = """#!/bin/bash
set -euo pipefail
mkdir -p /app/out
awk '$9 ~ /^5/ {split($7,p,"?"); print p[1]}' /app/logs/access.log | sort | uniq -c \\
  | awk '{print $2 "," $1}' | sort -t, -k2,2nr -k1,1 > /app/out/failing.csv
"""
BROKEN = SOLVE.replace("$9 ~ /^5/", "$9 ~ /^[45]/")  # counts the 499 too: the Oracle fails
CHEATS = {
    "every_path": "#!/bin/bash\nmkdir -p /app/out\nawk '{split($7,p,\"?\"); print p[1] \",1\"}' "
                  "/app/logs/access.log | sort -u > /app/out/failing.csv\n",
    "query_kept": "#!/bin/bash\nmkdir -p /app/out\nawk '$9 ~ /^5/ {print $7}' /app/logs/access.log | sort | uniq -c "
                  "| awk '{print $2 \",\" $1}' > /app/out/failing.csv\n",
}
BLUEPRINT = {
    "objective": "List the endpoints that answered 5xx, with query strings removed, counted and ordered.",
    "rules": [{"source": "SKILL.md:22-23", "kind": "format",
               "statement": "Group 5xx responses by path with the query string removed."}],
    "metrics": [{"name": "endpoints_correct", "checks": "share of right path,count rows", "rules": ["R1"]},
                {"name": "list_exact", "checks": "the whole list, in order", "rules": ["R1"]}],
    "challenges": [{"pattern": "", "instantiation": "the same path appears with and without query strings"}],
    "deliverables": ["/app/out/failing.csv"],
    "naive_failure": "Grouping by the raw request target splits /api/checkout?retry=1 from /api/checkout.",
}
HONEST = ("mkdir -p /app/out && awk '$9 ~ /^5/ {split($7,p,\"?\"); print p[1]}' /app/logs/access.log | sort | "
          "uniq -c | awk '{print $2 \",\" $1}' | sort -t, -k2,2nr -k1,1 > /app/out/failing.csv && "
          "bash /tests/test.sh; cat /logs/verifier/reward.json; rm -rf /app/out/*; bash /tests/test.sh; "
          "cat /logs/verifier/reward.json")


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _pattern(body: dict[str, Any]) -> str:
    """The sampled difficulty pattern, as the brief names it ("- <id> (<dimension>): ... <- the sampled one")."""
    brief = body["messages"][1]["content"]
    line = next((ln for ln in brief.splitlines() if ln.endswith("<- the sampled one")), "")
    if line:
        return line.removeprefix("- ").split(" ", 1)[0]
    for tool in body.get("tools") or []:  # none sampled: any the schema offers
        if tool["function"]["name"] == "set_blueprint":
            return tool["function"]["parameters"]["properties"]["challenges"]["items"]["properties"]["pattern"][
                "enum"][0]
    raise AssertionError("no set_blueprint tool offered")


def _minimal_ref(body: dict[str, Any]) -> str:
    brief = body["messages"][1]["content"]
    line = next(ln for ln in brief.splitlines() if "FROM " in ln and "minimal" in ln)
    return line.split("FROM ", 1)[1].split()[0]


def _source(body: dict[str, Any]) -> str:
    """log-triage-awk's rule (SKILL.md:22-23); for another skill (the end-to-end runs use this script on every
    skill of a small hub) its first line, which is all a scripted model can honestly cite."""
    brief = body["messages"][1]["content"]
    return "SKILL.md:22-23" if "Top failing endpoints" in brief else "SKILL.md:1"


def script(body: dict[str, Any], weak: bool, trial: bool = True) -> list[list[tuple[str, dict[str, Any]]]]:
    source = _source(body)
    rule = {**BLUEPRINT["rules"][0], "source": source}
    if source == "SKILL.md:1":  # not log-triage's rule: a statement with no number the first line lacks
        rule["statement"] = "Follow the skill's procedure (this scripted model cites only the skill's first line)."
    blueprint = {**BLUEPRINT, "challenges": [{**BLUEPRINT["challenges"][0], "pattern": _pattern(body)}],
                 "rules": [rule]}
    test_sh = WEAK_TEST_SH if weak else TEST_SH
    return [
        [("set_blueprint", blueprint),
         ("write_file", {"path": "environment/Dockerfile", "content": DOCKERFILE.format(minimal=_minimal_ref(body))}),
         ("write_file", {"path": "environment/app/logs/access.log", "content": ACCESS_LOG}),
         ("write_file", {"path": "solution/solve.sh", "content": SOLVE})],  # too early: refused
        [("write_file", {"path": "instruction.md", "content": INSTRUCTION}),
         ("write_file", {"path": "tests/test.sh", "content": test_sh}),
         ("write_file", {"path": "tests/expected.csv", "content": EXPECTED}),
         ("write_file", {"path": "tests/rubric.md", "content": RUBRIC}),
         ("run", {"command": HONEST})],
        [("check", {"reference_solution": SOLVE, "cheats": CHEATS} if trial else {}), ("freeze", {})],
        [("write_file", {"path": "tests/test.sh", "content": TEST_SH + "# more\n"}),  # frozen: refused
         ("write_file", {"path": "solution/solve.sh", "content": BROKEN}),
         *[("write_file", {"path": f"solution/cheats/{n}.sh", "content": c}) for n, c in CHEATS.items()],
         ("submit", {})],
        [("write_file", {"path": "solution/solve.sh", "content": SOLVE}), ("check", {}), ("submit", {})],
    ]


def creator_reply(body: dict[str, Any], weak_first: bool = False, trial: bool = True) -> dict[str, Any]:
    """The next turn for a request of the creator agent (see module docstring). Only turns that sent tool calls
    count, so a turn lost to a fault (a malformed or off-schema reply) is sent again. `trial`: the pre-freeze check
    also runs the whole gate with the reference solution and the cheats (the harness's default needs it before
    the freeze)."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls"))
    retry = "A previous candidate" in body["messages"][1]["content"]
    turns = script(body, weak=weak_first and not retry, trial=trial)
    if turn >= len(turns):
        return {"content": "Done."}
    return {"content": "", "tool_calls": [_call(i, name, args) for i, (name, args) in enumerate(turns[turn])]}
