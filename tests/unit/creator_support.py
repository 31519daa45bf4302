"""In-memory stand-ins for the creator agent's tests (no Docker, no HTTP): a scripted model, a lab whose
workbench records commands, and a gate that answers with prepared reports.

`ScriptedChat(turns)` answers turn i with `turns[i]`: a list of (tool, arguments) calls, a RequestedCall (to send
malformed arguments), a plain string (a reply without tool calls), an exception to raise, or a callable
(messages -> any of those). `TASK` is a small valid draft (a pinned Dockerfile, an instruction, a bash verifier,
a rubric) for the log-triage example skill, and `SOLVE`/`CHEATS` its solution and shortcuts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skill2env_dagster.creator.lab import RunResult
from skill2env_dagster.llm.tools import RequestedCall, ToolTurn
from skill2env_dagster.models.gate import (
    AttemptKind,
    CheckResult,
    CheckVerdict,
    GateReport,
    GateVerdict,
    ShortcutAttempt,
)
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.sandbox import CommandResult, Verification

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}
METRICS = ["endpoints_correct", "list_exact"]
TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
echo '{"endpoints_correct": 0, "list_exact": 0}' > /logs/verifier/reward.json
"""
TASK = {
    "environment/Dockerfile": f"FROM {PINS['minimal']}\nWORKDIR /app\nCOPY app/ /app/\n",
    "environment/app/access.log": '10.0.0.1 - - [12/Mar/2024:10:02:01 +0000] "POST /api/checkout HTTP/1.1" 502 0\n',
    "instruction.md": "Please write /app/out/failing.csv with each failing endpoint and its count, one per line.\n",
    "tests/test.sh": TEST_SH,
    "tests/rubric.md": "## Must-do\n- Count 5xx only\n## Must-avoid\n- Counting 499\n"
                       "## Best-practice\n- Strip queries\n",
}
SOLVE = "#!/bin/bash\nmkdir -p /app/out && echo '/api/checkout,1' > /app/out/failing.csv\n"
CHEATS = {"solution/cheats/empty.sh": "#!/bin/bash\ntrue\n", "solution/cheats/all.sh": "#!/bin/bash\ntrue\n"}
TRIAL = ("check", {"reference_solution": SOLVE,
                   "cheats": {p.removeprefix("solution/cheats/").removesuffix(".sh"): c for p, c in CHEATS.items()}})
BLUEPRINT = {"objective": "List the 5xx endpoints without their query strings, counted.",
             "rules": [{"source": "SKILL.md:22-23", "kind": "format", "statement": "Group 5xx by path."}],
             "metrics": [{"name": m, "checks": m} for m in METRICS],
             "challenges": [{"pattern": "PATTERN", "instantiation": "queries split a path"}],
             "deliverables": ["/app/out/failing.csv"], "naive_failure": "Grouping by the raw target."}

Turn = list[tuple[str, dict[str, Any]]] | RequestedCall | str | BaseException | Callable[[list[dict[str, Any]]], Any]


def writes(files: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    return [("write_file", {"path": p, "content": c}) for p, c in files.items()]


def build_and_freeze(pattern: str) -> list[Turn]:
    """The turns up to a freeze: blueprint and every pre-freeze file, then the trial with the naive cheats (the
    freeze needs it) and the freeze."""
    blueprint = {**BLUEPRINT, "challenges": [{**BLUEPRINT["challenges"][0], "pattern": pattern}]}
    return [[("set_blueprint", blueprint), *writes(TASK)], [TRIAL, ("freeze", {})]]


def solved() -> list[tuple[str, dict[str, Any]]]:
    return writes({"solution/solve.sh": SOLVE, **CHEATS})


class ScriptedChat:
    """Answers with the scripted turns (see module docstring); after the script, replies 'Done.'."""

    def __init__(self, turns: list[Turn], tokens_per_turn: int = 1000) -> None:
        self.turns, self.tokens, self.seen = list(turns), tokens_per_turn, []
        self.tools: list[dict[str, Any]] = []
        self.n = 0

    def turn(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **_: Any) -> ToolTurn:
        self.seen.append([dict(m) for m in messages])
        self.tools = tools
        item: Any = self.turns[self.n] if self.n < len(self.turns) else "Done."
        self.n += 1
        if callable(item) and not isinstance(item, BaseException):
            item = item(messages)
        if isinstance(item, BaseException):
            raise item
        usage = Usage(calls=1, prompt_tokens=self.tokens, completion_tokens=10)
        if isinstance(item, str):
            return ToolTurn(content=item, usage=usage)
        calls = [item] if isinstance(item, RequestedCall) else [
            RequestedCall(call_id=f"c{self.n}_{i}", name=name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(item)]
        return ToolTurn(content="", calls=calls, usage=usage)


class FakeWorkbench:
    def __init__(self) -> None:
        self.commands: list[str] = []
        self.closed = False

    def run(self, command: str, timeout: float) -> RunResult:
        self.commands.append(command)
        code = 1 if command.startswith("false") else 0
        return RunResult(CommandResult(code, head=f"ran {command}".encode(), total_bytes=len(command) + 4))

    def fetch(self, path: str, max_bytes: int) -> bytes:
        if path != "/app/generated.csv":
            raise ValueError(f"{path}: no such file in the workbench")
        return b"a,b\n1,2\n"

    def close(self) -> None:
        self.closed = True


class FakeLab:
    """Workbenches that record commands; the no-op scores `nop` (default: 0 on the task's two metrics)."""

    def __init__(self, nop: dict[str, float] | None = None) -> None:
        self.nop = dict.fromkeys(METRICS, 0.0) if nop is None else nop
        self.benches: list[FakeWorkbench] = []
        self.noops = 0

    def workbench(self, task_dir: Path, skill_dir: Path | None) -> FakeWorkbench:
        self.benches.append(FakeWorkbench())
        return self.benches[-1]

    def noop(self, task_dir: Path) -> Verification:
        self.noops += 1
        return Verification(metrics=dict(self.nop))


def report(verdict: GateVerdict, failing: str = "", reason: ReasonCode | None = None) -> GateReport:
    checks = [CheckResult(name="layout", verdict=CheckVerdict.PASS)]
    if failing:
        checks.append(CheckResult(name=failing, verdict=CheckVerdict.FAIL, reason=reason, evidence=f"{failing} bad"))
    return GateReport(task="t", verdict=verdict, reason=reason, checks=checks,
                      oracle=dict.fromkeys(METRICS, 1.0), nop=dict.fromkeys(METRICS, 0.0))


def trial_cheat_attempts(task_dir: Path) -> list[ShortcutAttempt]:
    """The gate's attempts for a trial's cheats, scoring 0: each did work (left a file changed) unless its script
    says `# no work` (the real measurement is the gate's, tested in Docker)."""
    return [ShortcutAttempt(kind=AttemptKind.CHEAT, name=f"cheats/{p.name}", family="cheat",
                            verdict=CheckVerdict.PASS, work=[] if "# no work" in p.read_text() else ["/app/out.txt"])
            for p in sorted((task_dir / "solution" / "cheats").glob("*.sh"))]


class FakeGate:
    """Answers each gate of a frozen draft with the next prepared report (the last one repeats), and each
    pre-freeze trial (a throw-away copy in a `.trial-` folder) with `trial` (default: retained)."""

    def __init__(self, *reports: GateReport, trial: GateReport | None = None) -> None:
        self.reports, self.calls = list(reports) or [report(GateVerdict.RETAINED)], 0
        self.trial, self.trials = trial or report(GateVerdict.RETAINED), 0

    def __call__(self, task_dir: Path) -> GateReport:
        if task_dir.parent.name.startswith(".trial-"):
            self.trials += 1
            cheats = self.trial.cheats or trial_cheat_attempts(task_dir)
            return self.trial.model_copy(update={"cheats": cheats})
        r = self.reports[min(self.calls, len(self.reports) - 1)]
        self.calls += 1
        return r


RETAINED = report(GateVerdict.RETAINED)
ORACLE_FAILED = report(GateVerdict.REJECTED, "oracle", ReasonCode.ORACLE_FAILED)
SHORTCUT = report(GateVerdict.REJECTED, "mutants", ReasonCode.SHORTCUT_PASSED)
