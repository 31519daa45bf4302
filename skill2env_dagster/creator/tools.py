"""The creator's tools: their OpenAI function schemas, argument parsing, and how gate evidence is shown back.

Nine tools. `write_file`, `delete_file` and `keep_file` change the draft (the draft enforces the order and the
freeze); `read_skill` pages through the skill's numbered files; `run` executes a command in the workbench;
`set_blueprint` states the design contract; `check` runs the gate's own stages on the draft; `freeze` closes the
grading; `submit` hands the task to the final gate. A call with arguments that are not a JSON object of the
declared fields is not executed: the model is told what was wrong.
"""

from __future__ import annotations

from typing import Any, get_args

from skill2env_dagster.llm.tools import RequestedCall
from skill2env_dagster.models.blueprint import PredicateKind
from skill2env_dagster.models.gate import AttemptKind, CheckVerdict, GateReport, ShortcutAttempt
from skill2env_dagster.rollouts.tools import call_arguments

METRIC = r"^[a-z][a-z0-9_]{0,47}$"
EVIDENCE_CHARS = 700


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def tool_specs(patterns: list[str]) -> list[dict[str, Any]]:
    """The tools offered; `patterns` are the difficulty pattern ids a blueprint challenge may name."""
    rule = {"type": "object", "additionalProperties": False, "required": ["source", "statement", "kind"],
            "properties": {"source": _str("Where the skill states it: ONE citation, path:line or path:first-last, "
                                          "from the numbered files (prose, code blocks, tables, scripts, data); "
                                          "a rule stated in two places is two rules."),
                           "statement": _str("The rule, limit, default or pitfall as the skill states it."),
                           "kind": {"type": "string", "enum": list(get_args(PredicateKind))}}}
    metric = {"type": "object", "additionalProperties": False, "required": ["name", "checks"],
              "properties": {"name": {"type": "string", "pattern": METRIC},
                             "checks": _str("What this metric measures, one sentence."),
                             "rules": {"type": "array", "items": {"type": "string", "pattern": r"^R\d{1,2}$"},
                                       "description": "Ids of the rules it grades (R1 = the first rule given)."}}}
    challenge = {"type": "object", "additionalProperties": False, "required": ["pattern", "instantiation"],
                 "properties": {"pattern": {"type": "string", "enum": patterns},
                                "instantiation": _str("What the pattern is in this task's world.")}}
    lines = {"type": "array", "items": {"type": "string"}}
    return [
        _fn("write_file", "Create or replace a text file of the draft task. `path` is relative to the task folder: "
            "environment/..., instruction.md, tests/..., tests/rubric.md, solution/solve.sh, solution/wrong.sh, "
            "solution/cheats/<name>.sh. Refused (with the reason) when out of order or frozen.",
            {"path": _str("Path relative to the task folder."), "content": _str("The whole file.")},
            ["path", "content"]),
        _fn("delete_file", "Delete a file of the draft (same order and freeze rules as write_file).",
            {"path": _str("Path relative to the task folder.")}, ["path"]),
        _fn("keep_file", "Copy a file the workbench produced (e.g. data your generator wrote, anywhere, /tmp too) "
            "into the draft.",
            {"container_path": _str("Absolute path in the workbench container."),
             "path": _str("Destination relative to the task folder (same rules as write_file).")},
            ["container_path", "path"]),
        _fn("read_skill", "Read lines of one of the skill's files, numbered (at most 400 lines per call).",
            {"path": _str("Path relative to the skill folder, as listed."),
             "first_line": {"type": "integer", "minimum": 1}, "last_line": {"type": "integer", "minimum": 1}},
            ["path"]),
        _fn("run", "Run a bash command in the workbench: a container of your environment/ image (rebuilt when "
            "environment/ changes), working directory /app, no network, root without capabilities (as in the "
            "gate: no setuid, no switching users); your tests/ at /tests, solution/ at "
            "/solution, the skill's files at /skill. Files you create there stay until environment/ changes (then the "
            "image is rebuilt and a fresh container starts, so keep generated files you need with keep_file first).",
            {"command": _str("A bash command."), "timeout_sec": {"type": "integer", "minimum": 1, "maximum": 1800}},
            ["command"]),
        _fn("set_blueprint", "State the task's contract (may be restated until the freeze). Every rule cites the "
            "skill line(s) it comes from; the metrics are exactly those tests/test.sh will write.",
            {"objective": _str("What the solver must achieve, one or two sentences."),
             "rules": {"type": "array", "items": rule, "minItems": 1, "maxItems": 8},
             "metrics": {"type": "array", "items": metric, "minItems": 1, "maxItems": 6},
             "challenges": {"type": "array", "items": challenge, "minItems": 1, "maxItems": 4},
             "deliverables": {**lines, "description": "Container paths the solver must produce."},
             "discover": {**lines, "description": "What the solver must find out from the world (not told)."},
             "naive_failure": _str("How a solver who ignores the skill's method gets it wrong."),
             "files_to_read": {"type": "integer", "minimum": 1}, "dependent_steps": {"type": "integer", "minimum": 1},
             "items": {"type": "integer", "minimum": 1, "description": "Records/cases/documents to handle."}},
            ["objective", "rules", "metrics", "challenges", "deliverables", "naive_failure"]),
        _fn("check", "Run the gate's own stages on the draft and show their evidence. Before the freeze: the "
            "static checks, the image build and the no-op (your verifier on the untouched world); with "
            "`reference_solution`, also the whole gate on a throw-away copy of the draft with that script as "
            "solution/solve.sh and your `cheats` (Oracle, mutants, skill-blind baselines, your cheats, tamper kit), "
            "so that a weak verifier is "
            "found while tests/ can still change. After the freeze: the whole gate (Oracle, no-op, wrong.sh, "
            "mutants, skill-blind baselines, your cheats, the tamper kit).",
            {"reference_solution": _str("Before the freeze only: a draft of solution/solve.sh (a bash script) to "
                                        "try the whole gate with. Not kept: after the freeze write "
                                        "solution/solve.sh itself."),
             "cheats": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "Before the freeze only, with reference_solution: your naive solvers, name "
                                       "-> bash script, run as solution/cheats/<name>.sh and judged per metric. "
                                       "Not kept: after the freeze write them as solution/cheats/<name>.sh."}}, []),
        _fn("freeze", "Close environment/, instruction.md and tests/ for good. Refused unless the blueprint is "
            "set, the static checks pass, the no-op scores 0 on exactly the blueprint's metrics, the world does "
            "not repeat the skill's lines and (when required) a trial `check` with your cheats retained the draft "
            "as it is.", {}, []),
        _fn("submit", "Hand the task to the final gate (needs the freeze, solution/solve.sh and at least two "
            "cheats). Retained: done. A solution bug (Oracle or wrong.sh) is shown back for repair; any other "
            "rejection ends this candidate.", {}, []),
    ]


def parse_arguments(call: RequestedCall, spec: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The call's arguments as a dict, or why not (not JSON, not an object, a missing or unknown field)."""
    args, problem = call_arguments(call)
    if problem:
        return args, problem
    params = spec["function"]["parameters"]
    missing = [k for k in params["required"] if k not in args]
    unknown = [k for k in args if k not in params["properties"]]
    if missing or unknown:
        return args, "; ".join(filter(None, [f"missing {missing}" if missing else "",
                                             f"unknown {unknown}" if unknown else ""]))
    wrong = [k for k, v in args.items() if params["properties"][k].get("type") == "string" and not isinstance(v, str)]
    return args, f"{wrong} must be strings" if wrong else ""


def _attempts(attempts: list[ShortcutAttempt], kind: AttemptKind) -> list[str]:
    out = []
    for a in attempts:
        if a.kind is not kind:
            continue
        verdict = {CheckVerdict.FAIL: f"FAILS ({a.reason.value if a.reason else '-'})", CheckVerdict.PASS: "ok",
                   CheckVerdict.SKIPPED: "skipped"}.get(a.verdict, a.verdict.value)
        work = "" if a.work is None else f" work: {', '.join(a.work) if a.work else 'none'}"
        out.append(f"  {a.name} [{a.family}] mean {a.mean:.2f} {a.metrics or '{}'} {verdict}{work}"
                   + (f": {a.evidence[:300]}" if a.verdict is CheckVerdict.FAIL else ""))
    return out


def describe_report(report: GateReport) -> str:
    """The gate's evidence as the creator sees it: verdict, every check, the per-metric rewards of the Oracle,
    the no-op and wrong.sh, and every mutant, skill-blind baseline, cheat and tamper attack with its scores."""
    head = f"gate verdict: {report.verdict.value}" + (f" ({report.reason.value})" if report.reason else "")
    passed = [c.name for c in report.checks if c.verdict is CheckVerdict.PASS]
    lines = [head, f"passed: {', '.join(passed) or 'none'}"]
    for c in report.checks:
        if c.verdict is not CheckVerdict.PASS:
            reason = f" ({c.reason.value})" if c.reason else ""
            lines.append(f"{c.verdict.value.upper()} {c.name}{reason}: {c.evidence[:EVIDENCE_CHARS]}")
    lines.append(f"Oracle metrics: {report.oracle or 'none'}; no-op metrics: {report.nop or 'none'}"
                 + (f"; wrong.sh metrics: {report.wrong}" if report.wrong is not None else ""))
    for label, kind in (("mutants", AttemptKind.MUTANT), ("skill-blind baselines", AttemptKind.BASELINE),
                        ("cheats", AttemptKind.CHEAT), ("tamper kit", AttemptKind.TAMPER)):
        rows = _attempts(report.mutants + report.baselines + report.cheats + report.tamper, kind)
        if rows:
            lines += [f"{label}:", *rows]
    if report.mutation_testing not in ("", "on"):
        lines.append(f"mutation testing: {report.mutation_testing}")
    return "\n".join(lines)
