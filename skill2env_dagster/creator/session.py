"""One candidate of the creator agent: a tool-calling conversation that authors a task in its draft folder.

The loop is the solver harness's (llm.tools.ToolChat turns, several tool calls per turn, an ATIF trajectory
recorded as it happens), with the creator's tools and three budgets checked between turns: turns, tokens and wall
time. Nothing the model does raises: a malformed call is shown back, a refused write says why, a repeated failing
call ends the session (`creator_loop`), replies without tool calls get a bounded number of reminders
(`creator_incomplete`), an exhausted budget ends it (`creator_budget_exhausted`), a failed model call ends it with
the endpoint's reason. Whenever it ends with a frozen, solved task the final gate decides; otherwise the stop
reason is the candidate's verdict.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skill2env_dagster.atomic import atomic_write_bytes, atomic_write_text
from skill2env_dagster.catalogue import DifficultyPattern, load_patterns
from skill2env_dagster.creator.draft import ORDER_TEXT, Draft, RefusalError
from skill2env_dagster.creator.grounding import quoted_skill_lines, unsourced_numbers
from skill2env_dagster.creator.lab import Lab, Workbench
from skill2env_dagster.creator.rules import MIN_CHEATS, render_rules
from skill2env_dagster.creator.settings import CreatorLimits
from skill2env_dagster.creator.skill_view import SkillView
from skill2env_dagster.creator.tools import describe_report, parse_arguments, tool_specs
from skill2env_dagster.gates import blind
from skill2env_dagster.gates.reuse import task_digest
from skill2env_dagster.gates.reward import all_zero
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.solver_run import write_helper
from skill2env_dagster.gates.static_checks import LEAK_MIN_LINE, provenance_marks, run_static_checks
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.prompts import render, untrusted
from skill2env_dagster.llm.tools import ChatMessage, RequestedCall, ToolTurn
from skill2env_dagster.models.blueprint import (
    AxisRealisation,
    Challenge,
    Complexity,
    Criterion,
    InformationBoundary,
    Predicate,
    TaskBlueprint,
)
from skill2env_dagster.models.gate import AttemptKind, CheckResult, CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.plan import Usage, total_usage
from skill2env_dagster.models.task import CreatorRun, TaskStatus
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InfraError, InputError, ReasonCode
from skill2env_dagster.rollouts.sandbox import CommandResult, SandboxGoneError
from skill2env_dagster.rollouts.tools import ToolOutcome, render_output
from skill2env_dagster.rollouts.trajectory import TrajectoryRecorder, now_iso
from skill2env_dagster.tasks.generator import CreationContext
from skill2env_dagster.tasks.pipeline import repairable, workflow_sources

log = logging.getLogger(__name__)

SYSTEM = "creator_system.j2"
BRIEF = "creator_brief.j2"
WRITE_CHARS = 1_000_000
TURNS = {"easy": "3-5", "medium": "5-10", "hard": "10-20", "complex": "20+"}
QUOTES = "the world hands over the skill (the solver must bring its method; state the facts, not the skill's rules)"
CHEAT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
FLAVOURS = {"minimal": "bash, coreutils, grep, sed, mawk", "python": "the same plus python3 and its standard library"}
GateFn = Callable[[Path], GateReport]


class Chat(Protocol):
    """What the session needs from a model endpoint (llm.tools.ToolChat satisfies it; tests pass scripts)."""

    def turn(self, messages: list[ChatMessage], tools: list[dict[str, Any]], *, temperature: float | None = None,
             max_tokens: int | None = None, purpose: str = "agent") -> ToolTurn: ...


@dataclass
class Outcome:
    """One tool call's result as the model sees it, and what it means for the loop."""

    text: str
    failed: bool = False
    end: bool = False
    exit_code: int | None = None
    timed_out: bool = False
    omitted: int = 0


@dataclass
class SessionResult:
    stop: str
    reasons: list[ReasonCode]
    evidence: list[str]
    report: GateReport | None
    frozen: bool
    blueprint: TaskBlueprint | None
    metrics: list[str]
    flavour: str
    run: CreatorRun


@dataclass
class _State:
    turns: list[ToolTurn] = field(default_factory=list)
    tool_calls: int = 0
    tool_seconds: float = 0.0
    gate_runs: int = 0
    repairs: int = 0
    nudges: int = 0
    fails: dict[str, tuple[int, int]] = field(default_factory=dict)  # call signature -> (times, draft revision)
    last_gate: tuple[str, GateReport] | None = None
    trial_passed: int | None = None  # the draft revision a pre-freeze trial with enough cheats retained
    report: GateReport | None = None  # the final gate's
    submitted: bool = False

    def tokens(self) -> int:
        return sum(t.usage.prompt_tokens + t.usage.completion_tokens for t in self.turns)


class Session:
    """Runs one candidate (see module docstring); `run()` never raises for anything the model does."""

    def __init__(self, chat: Chat, model: str, limits: CreatorLimits, ctx: CreationContext, draft: Draft,
                 view: SkillView, lab: Lab, gate: GateFn, gate_settings: GateSettings,
                 patterns: list[DifficultyPattern], make_config: Callable[[TaskBlueprint | None, str], TaskToml],
                 trajectory: Path, *, max_repairs: int = 2, previous: str = "", candidate: int = 1,
                 prompts_folder: Path | str | None = None) -> None:
        self.chat, self.model, self.limits, self.ctx, self.draft = chat, model, limits, ctx, draft
        self.view, self.lab, self.gate, self.gate_settings = view, lab, gate, gate_settings
        self.patterns, self.make_config, self.trajectory = patterns, make_config, trajectory
        self.max_repairs, self.previous, self.candidate, self.folder = max_repairs, previous, candidate, prompts_folder
        # Every pattern of the catalogue, in one fixed order: the schema is the same in every conversation (a
        # model answering many of them must not find a pattern it used elsewhere refused); the brief says which.
        self.catalogue = load_patterns().patterns
        self.tools = tool_specs(sorted(p.id for p in self.catalogue))
        self.specs = {t["function"]["name"]: t for t in self.tools}
        self.blueprint: TaskBlueprint | None = None
        self.metrics: list[str] = []
        self.state = _State()
        self.recorder = TrajectoryRecorder(f"{ctx.task_name}-c{candidate}", model, self.tools)
        self.messages: list[ChatMessage] = []
        self._bench: Workbench | None = None
        self.reused = False  # the last _gate() call answered with the previous report (the draft unchanged)

    # --- prompts -------------------------------------------------------------------------------------------------
    def _open(self) -> None:
        lim, s = self.limits, self.ctx.sample
        system = render(SYSTEM, folder=self.folder, order=ORDER_TEXT,
                        rules=render_rules(self.gate_settings, lim), min_cheats=MIN_CHEATS,
                        max_repairs=self.max_repairs, max_candidates=lim.max_candidates,
                        write_chars=f"{WRITE_CHARS:,}").strip()
        workflow = self.ctx.workflow.model_dump(mode="json", include={"name", "summary", "meta_plan"})
        brief = render(BRIEF, folder=self.folder, skill_name=self.ctx.skill.name or self.ctx.skill.skill_id,
                       skill_description=self.ctx.skill.description or "",
                       workflow_json=json.dumps(workflow, ensure_ascii=False, indent=1), sample=s,
                       turns=TURNS.get(s.complexity, "several"), patterns=self.patterns,
                       required=list(s.added_patterns), images=self.ctx.base_images, flavours=FLAVOURS,
                       previous=self.previous, provenance=provenance_marks(self.ctx.skill.skill_id,
                                                                           self.ctx.skill.bundle_digest),
                       planned_on=workflow_sources(self.ctx.workflow, line_level=False),
                       max_turns=lim.max_turns, max_tokens=f"{lim.max_total_tokens:,}",
                       max_minutes=f"{lim.max_wall_sec / 60:g}", listing=self.view.listing(lim.view_chars)).strip()
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": brief}]
        self.recorder.message("system", system)
        self.recorder.message("user", brief)

    # --- the loop --------------------------------------------------------------------------------------------------
    def run(self) -> SessionResult:
        start = time.perf_counter()
        self._open()
        stop, evidence = "max_turns", ""
        reason: ReasonCode | None = ReasonCode.CREATOR_BUDGET_EXHAUSTED
        try:
            stop, reason, evidence = self._loop(start)
            if not self.state.submitted and self._ready():
                self._final_gate()  # out of budget or off the rails, but a complete task: the gate decides
        except InfraError as e:
            stop, reason, evidence = "infra_failed", e.reason, str(e)[:500]
        except Exception as e:  # a bug: this candidate's record says so, the trajectory is kept
            log.exception("creator task=%s candidate=%d crashed", self.ctx.task_name, self.candidate)
            stop, reason, evidence = "crashed", ReasonCode.INTERNAL_ERROR, f"{type(e).__name__}: {e}"[:500]
        finally:
            if self._bench is not None:
                self._bench.close()
        return self._result(stop, reason, evidence, time.perf_counter() - start)

    def _loop(self, start: float) -> tuple[str, ReasonCode | None, str]:
        lim, st = self.limits, self.state
        for n in range(1, lim.max_turns + 1):
            if time.perf_counter() - start > lim.max_wall_sec:
                return "max_wall_time", ReasonCode.CREATOR_BUDGET_EXHAUSTED, \
                    f"{lim.max_wall_sec:g} s used ({self._where()})"
            if st.tokens() >= lim.max_total_tokens:
                return "max_tokens", ReasonCode.CREATOR_BUDGET_EXHAUSTED, \
                    f"{st.tokens():,} tokens used ({self._where()})"
            started = now_iso()
            try:
                turn = self.chat.turn(self.messages, self.tools, temperature=lim.temperature,
                                      max_tokens=lim.max_tokens_per_turn,
                                      purpose=f"creator:{self.ctx.task_name}:c{self.candidate}")
            except LLMError as e:
                if e.usage is not None:
                    st.turns.append(ToolTurn(usage=e.usage))
                return "model_failed", e.reason, str(e)[:500]
            st.turns.append(turn)
            self.messages.append(turn.as_message())
            if not turn.calls:
                self.recorder.agent_turn(turn, [], started)
                ended = self._no_call(n)
            else:
                ended = self._act(turn, started, n)
            if ended is not None:
                return ended
        return "max_turns", ReasonCode.CREATOR_BUDGET_EXHAUSTED, f"{lim.max_turns} turns used ({self._where()})"

    def _no_call(self, n: int) -> tuple[str, ReasonCode | None, str] | None:
        """A reply without tool calls: the model says it is done. A complete task goes to the gate; otherwise a
        reminder, a bounded number of times."""
        if self._ready():
            outcome = self._submit(implicit=True)
            self._say(f"(no tool was called, so the task was submitted)\n{outcome.text}")
            return ("submitted", None, "") if outcome.end else None
        st = self.state
        if st.nudges >= self.limits.nudges:
            return "incomplete", ReasonCode.CREATOR_INCOMPLETE, f"stopped calling tools at turn {n} ({self._where()})"
        st.nudges += 1
        self._say(f"No tool was called, but the task is not complete ({self._where()}). Continue with tool calls; "
                  f"`submit` when it is done. ({self.limits.nudges - st.nudges} reminder(s) left)")
        return None

    def _say(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        self.recorder.message("user", text)

    def _act(self, turn: ToolTurn, started: str, n: int) -> tuple[str, ReasonCode | None, str] | None:
        done: list[tuple[RequestedCall, ToolOutcome]] = []
        ended: tuple[str, ReasonCode | None, str] | None = None
        try:
            for call in turn.calls:
                t0 = time.perf_counter()
                args, outcome = self._dispatch(call)
                seconds = time.perf_counter() - t0
                self.state.tool_calls += 1
                self.state.tool_seconds += seconds
                loop = self._loop_check(call, outcome)
                text = outcome.text + (f"\n{loop}" if loop else "")
                done.append((call, ToolOutcome(text, args, outcome.exit_code, outcome.timed_out, outcome.omitted,
                                               seconds=seconds, malformed=outcome.text if outcome.failed and
                                               outcome.text.startswith("error:") else "")))
                self.messages.append({"role": "tool", "tool_call_id": call.call_id, "content": text})
                if outcome.end:
                    ended = ("submitted", None, "")
                    break
                if loop.startswith("ended"):
                    ended = ("loop", ReasonCode.CREATOR_LOOP, f"{call.name} failed {self.limits.loop_limit} times "
                             f"in a row: {outcome.text[:300]}")
                    break
        finally:
            self.recorder.agent_turn(turn, done, started)
        if ended is None and done:
            self.messages[-1]["content"] += f"\n[{self._status(n)}]"
        return ended

    def _loop_check(self, call: RequestedCall, outcome: Outcome) -> str:
        """'' normally; a warning, or 'ended…' when the same call failed loop_limit times with no draft change."""
        sig = f"{call.name}:{call.arguments}"
        fails = self.state.fails
        if not outcome.failed:
            fails.pop(sig, None)
            return ""
        times, rev = fails.get(sig, (0, self.draft.revision))
        times = times + 1 if rev == self.draft.revision else 1
        fails[sig] = (times, self.draft.revision)
        if times >= self.limits.loop_limit:
            return f"ended: this exact call failed {times} times with no change to the draft in between"
        if times == self.limits.loop_limit - 1:
            return (f"(this exact call has failed {times} times with no change to the draft; one more identical "
                    "failure ends this candidate)")
        return ""

    def _status(self, n: int) -> str:
        lim = self.limits
        return (f"turn {n}/{lim.max_turns}, tokens {self.state.tokens():,}/{lim.max_total_tokens:,}; "
                f"{self._where()}")

    def _where(self) -> str:
        if self.draft.frozen:
            return "frozen; " + ("solve.sh written" if self.draft.exists("solution/solve.sh") else "next: solution")
        return "not frozen; next: " + self.draft.phase() + ("" if self.blueprint else " (blueprint not set)")

    def _ready(self) -> bool:
        return self.draft.frozen and self.draft.exists("solution/solve.sh")

    # --- tools -----------------------------------------------------------------------------------------------------
    def _dispatch(self, call: RequestedCall) -> tuple[dict[str, Any], Outcome]:
        spec = self.specs.get(call.name)
        if spec is None:
            return {}, Outcome(f"error: unknown tool {call.name!r}; the call was not executed", failed=True)
        args, problem = parse_arguments(call, spec)
        if problem:
            return args, Outcome(f"error: {problem}; the call was not executed", failed=True)
        handler: Callable[[dict[str, Any]], Outcome] = getattr(self, f"_tool_{call.name}")
        try:
            return args, handler(args)
        except RefusalError as e:
            return args, Outcome(str(e), failed=True)

    def _tool_write_file(self, a: dict[str, Any]) -> Outcome:
        if len(a["content"]) > WRITE_CHARS:
            raise RefusalError(f"refused: {len(a['content'])} characters; write at most {WRITE_CHARS:,} per call "
                               "(generate bigger files in the workbench and keep_file them)")
        return Outcome(self.draft.write(a["path"], a["content"]))

    def _tool_delete_file(self, a: dict[str, Any]) -> Outcome:
        return Outcome(self.draft.delete(a["path"]))

    def _tool_keep_file(self, a: dict[str, Any]) -> Outcome:
        try:
            data = self._workbench().fetch(a["container_path"], 8 << 20)
        except ValueError as e:
            raise RefusalError(f"refused: {e}") from e
        return Outcome(self.draft.write(a["path"], data))

    def _tool_read_skill(self, a: dict[str, Any]) -> Outcome:
        try:
            text = self.view.read(a["path"], int(a.get("first_line") or 1),
                                  int(a["last_line"]) if a.get("last_line") else None)
        except (ValueError, TypeError) as e:
            raise RefusalError(f"refused: {e}") from e
        return Outcome(untrusted(text, "skill_file"))

    def _workbench(self) -> Workbench:
        if self._bench is None:
            self._bench = self.lab.workbench(self.draft.dir.root, Path(self.ctx.skill.abs_path)
                                             if self.ctx.skill.abs_path else None)
        return self._bench

    def _tool_run(self, a: dict[str, Any]) -> Outcome:
        timeout = min(float(a.get("timeout_sec") or self.limits.command_timeout_sec), self.limits.command_timeout_sec)
        try:
            done = self._workbench().run(a["command"], timeout)
        except InputError as e:  # the image does not build, or a stand-in service does not start
            return Outcome(f"[the workbench could not start: {e}]", failed=True)
        res: CommandResult = done.result
        body, omitted = render_output(res, 1 << 20)
        status = (f"[command timed out after {timeout:g}s and was killed]" if res.timed_out else
                  f"[exit code {res.exit_code}]" if res.exit_code is not None else "[no exit code]")
        note = f"[{done.note}]\n" if done.note else ""
        return Outcome(f"{note}{status}\n{untrusted(body, 'command_output')}", failed=res.exit_code != 0,
                       exit_code=res.exit_code, timed_out=res.timed_out, omitted=omitted)

    def _tool_set_blueprint(self, a: dict[str, Any]) -> Outcome:
        if self.draft.frozen:
            raise RefusalError("refused: the blueprint is part of the grading contract and is frozen")
        self.blueprint = blueprint_from(a, self.ctx, self.view, self.catalogue, strict=self.limits.strict)
        self.draft.revision += 1
        missing = [p.id for p in self.patterns[:1] if p.id not in {c.pattern for c in self.blueprint.challenges}]
        note = f" (note: the sampled pattern {missing[0]} is not instantiated)" if missing else ""
        rules = "; ".join(f"{p.id} {p.source.label}" for p in self.blueprint.predicates)
        return Outcome(f"blueprint set: rules {rules}; metrics {[c.metric for c in self.blueprint.acceptance]}{note}")

    def _tool_check(self, a: dict[str, Any]) -> Outcome:
        reference = str(a.get("reference_solution") or "")
        cheats = trial_cheats(a.get("cheats"))
        if not self.draft.frozen:
            ok, text, _ = self._precheck()
            if not reference:
                return Outcome(text + "\n(mutants, skill-blind baselines, your naive cheats and the tamper kit "
                               "need the Oracle's answer: pass a draft solve.sh as `reference_solution`, and your "
                               "cheats as `cheats`, to run them before the freeze)", failed=not ok)
            if not ok:
                return Outcome(text + "\ntrial gate with your reference_solution: not run (fix the above first)",
                               failed=True)
            revision = self.draft.revision
            report = own_cheats_per_metric(self._trial(reference, cheats))
            retained = report.verdict is GateVerdict.RETAINED
            working, idle = cheats_at_work(report)
            enough = len(working) >= MIN_CHEATS
            if retained and enough:
                self.state.trial_passed = revision
            idle_note = (f"; these did no work (no non-empty file changed on disk outside /tmp, /logs, /tests and "
                         f"/solution), so they do not count: {', '.join(idle)}" if idle else "")
            note = ("this draft may be frozen now" if retained and enough else
                    f"the freeze needs a retained trial with at least {MIN_CHEATS} cheats that do work "
                    f"({len(working)} did{idle_note})" if retained else
                    "fix the draft and try again before the freeze")
            return Outcome(f"{text}\n--- the whole gate on a throw-away copy of the draft, your reference_solution "
                           f"as solution/solve.sh and {len(cheats)} cheat(s) as solution/cheats/ (nothing of it "
                           f"was kept; wrong.sh comes after the freeze):\n{describe_report(report)}\n({note})",
                           failed=not (retained and enough))
        if reference or cheats:
            raise RefusalError("refused: reference_solution and cheats are for trials before the freeze; write "
                               "solution/solve.sh and solution/cheats/<name>.sh now")
        report = self._gate()
        text = describe_report(report)
        if report.verdict is GateVerdict.REJECTED and not repairable(report):
            text += ("\nThis failure is in the frozen part (world or grading) and cannot be fixed now: `submit` to "
                     "end this candidate" + ("; a new one starts with this evidence." if
                                             self.limits.max_candidates > self.candidate else "."))
        return Outcome(text, failed=report.verdict is not GateVerdict.RETAINED)

    def _tool_freeze(self, a: dict[str, Any]) -> Outcome:
        if self.draft.frozen:
            raise RefusalError(f"refused: already frozen ({self.draft.freeze_hash})")
        if self.blueprint is None:
            raise RefusalError("refused: set_blueprint before the freeze (it states the metrics the tests write)")
        missing = self.draft.missing_before_freeze()
        if missing:
            raise RefusalError(f"refused: missing {missing} (order: {ORDER_TEXT})")
        quoted = quoted_skill_lines(self.draft.dir.root, self.view.texts()) if self.limits.strict else []
        if quoted:
            raise RefusalError(f"refused: {QUOTES}: " + "; ".join(quoted)[:1500])
        if self.limits.strict and self.state.trial_passed != self.draft.revision:
            raise RefusalError("refused: no retained trial of the draft as it is now: `check` with "
                               f"`reference_solution` and at least {MIN_CHEATS} `cheats` (the naive solvers of the "
                               "rules) must retain it first; any change to the draft since needs a new trial")
        ok, text, metrics = self._precheck()
        wanted = [c.metric for c in self.blueprint.acceptance]
        if ok and sorted(metrics) != sorted(wanted):
            ok, text = False, text + (f"\ncontract: test.sh writes {sorted(metrics)}, the blueprint names "
                                      f"{sorted(wanted)}; make them the same")
        if not ok:
            raise RefusalError(f"refused: the draft is not ready to freeze\n{text}")
        digest = self.draft.freeze_with(self.make_config(self.blueprint, self.flavour()))
        self.metrics = metrics
        return Outcome(f"frozen ({digest}): environment/, instruction.md and tests/ are read-only from now on. "
                       f"Next: solution/solve.sh (and optionally solution/wrong.sh), then at least {MIN_CHEATS} "
                       "solution/cheats/<name>.sh, `check`, `submit`. The no-leak rule covers solution/ too: no line "
                       f"of {LEAK_MIN_LINE} or more characters of solve.sh or wrong.sh may repeat a line of "
                       "environment/ or instruction.md (`check` shows it).")

    def _tool_submit(self, a: dict[str, Any]) -> Outcome:
        return self._submit(implicit=False)

    # --- gate stages ---------------------------------------------------------------------------------------------
    def flavour(self) -> str:
        """The base image the Dockerfile starts from ('minimal' when it names none of ours)."""
        path = self.draft.dir.dockerfile
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        return next((f for f, ref in self.ctx.base_images.items() if ref in text), "minimal")

    def _precheck(self) -> tuple[bool, str, list[str]]:
        """Before the freeze: the static checks that concern the frozen part, the build and the no-op."""
        atomic_write_bytes(self.draft.dir.config, self.make_config(self.blueprint, self.flavour()).to_toml().encode())
        lines, ok = [], True
        for c in run_static_checks(self.draft.dir.root, self.gate_settings.approved_registries):
            problems = [p for p in c.evidence.split("; ") if p and not p.startswith("solution/")] \
                if c.name == "layout" else [c.evidence]
            if c.verdict in (CheckVerdict.PASS, CheckVerdict.SKIPPED) or not problems:
                continue
            ok = False
            lines.append(f"FAIL {c.name} ({c.reason.value if c.reason else '-'}): {'; '.join(problems)[:700]}")
        quoted = quoted_skill_lines(self.draft.dir.root, self.view.texts()) if self.limits.strict else []
        if quoted:  # the freeze refuses it too; shown here so a trial is not retained on a world the freeze refuses
            ok = False
            lines.append(f"FAIL {QUOTES}: " + "; ".join(quoted)[:1500])
        lines.insert(0, "static checks: " + ("pass" if ok else "failures below"))
        if not self.draft.exists("tests/test.sh"):
            return ok, "\n".join([*lines, "no-op: not run (no tests/test.sh yet)"]), []
        self.state.gate_runs += 1
        try:
            v = self.lab.noop(self.draft.dir.root)
        except InputError as e:
            return False, "\n".join([*lines, f"build/no-op failed ({e.reason.value}): {str(e)[:1500]}"]), []
        except SandboxGoneError as e:
            return False, "\n".join([*lines, f"no-op: the container stopped while test.sh ran ({e}): the verifier "
                                      "must not kill the container's processes"]), []
        if not v.metrics:
            why = v.reason.value if v.reason else "no reward"
            return False, "\n".join([*lines, f"no-op: no usable reward ({why}): {v.evidence[:700]}"]), []
        zero = all_zero(v.metrics)
        lines.append(f"no-op (test.sh on the untouched environment): {v.metrics} -> "
                     + ("ok, every metric 0" if zero else "FAIL: every metric must be 0 (nop_failed)"))
        return ok and zero, "\n".join(lines), sorted(v.metrics)

    def _trial(self, solve_sh: str, cheats: dict[str, str] | None = None) -> GateReport:
        """The whole gate on a copy of the unfrozen draft with a draft reference solution and the model's draft
        cheats; the copy is removed."""
        scratch = Path(tempfile.mkdtemp(prefix=".trial-", dir=self.draft.dir.root.parent))
        try:
            copy = scratch / self.draft.dir.root.name
            shutil.copytree(self.draft.dir.root, copy, ignore=shutil.ignore_patterns("solution"))
            write_helper(copy / "tests")  # as the freeze will (the model may have changed or removed it)
            (copy / "solution").mkdir()
            script = copy / "solution" / "solve.sh"
            script.write_text(solve_sh, encoding="utf-8")
            script.chmod(0o755)
            for name, body in (cheats or {}).items():
                cheat = copy / "solution" / "cheats" / f"{name}.sh"
                cheat.parent.mkdir(exist_ok=True)
                cheat.write_text(body, encoding="utf-8")
                cheat.chmod(0o755)
            self.state.gate_runs += 1
            report = self.gate(copy)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if report.verdict is GateVerdict.INFRA_FAILED:
            raise InfraError(report.reason or ReasonCode.INTERNAL_ERROR, describe_report(report)[:1000])
        return report

    def _gate(self) -> GateReport:
        """The whole gate on the draft; the last report again while the draft is unchanged (`reused`)."""
        digest = task_digest(self.draft.dir.root)
        last = self.state.last_gate
        self.reused = last is not None and last[0] == digest
        if last is not None and self.reused:
            return last[1]
        self.state.gate_runs += 1
        report = own_cheats_per_metric(self.gate(self.draft.dir.root))
        self.state.last_gate = (digest, report)
        if report.verdict is GateVerdict.INFRA_FAILED:
            raise InfraError(report.reason or ReasonCode.INTERNAL_ERROR, describe_report(report)[:1000])
        return report

    def _submit(self, implicit: bool) -> Outcome:
        if not self.draft.frozen:
            raise RefusalError(f"refused: nothing to submit before the freeze ({self._where()})")
        if not self.draft.exists("solution/solve.sh"):
            raise RefusalError("refused: write solution/solve.sh first")
        cheats = len(self.draft.dir.cheat_scripts())
        if cheats < MIN_CHEATS and not implicit:
            raise RefusalError(f"refused: {cheats} cheat(s) in solution/cheats/; write at least {MIN_CHEATS}")
        report = self._final_gate()
        text = describe_report(report) + ("\n(the report of your last check: the draft has not changed since)"
                                          if self.reused else "")
        if report.verdict is GateVerdict.RETAINED:
            return Outcome(f"{text}\nThe task is retained. Done.", end=True)
        if repairable(report) and self.state.repairs < self.max_repairs:
            self.state.repairs += 1
            self.state.submitted = False
            return Outcome(f"{text}\nA solution bug: fix solution/ only and submit again "
                           f"({self.max_repairs - self.state.repairs} more repair(s) after this one).", failed=True)
        return Outcome(f"{text}\nThe candidate is rejected.", end=True)

    def _final_gate(self) -> GateReport:
        self.state.submitted = True
        self.state.report = self._gate()
        return self.state.report

    # --- the record ------------------------------------------------------------------------------------------------
    def _result(self, stop: str, reason: ReasonCode | None, evidence: str, seconds: float) -> SessionResult:
        st, report = self.state, self.state.report
        if report is not None:  # the gate decided
            reasons = [] if report.verdict is GateVerdict.RETAINED else [report.reason or ReasonCode.INTERNAL_ERROR]
            evidence_list = [f"{c.name}: {c.evidence}"[:500] for c in report.checks
                             if c.verdict is not CheckVerdict.PASS and c.verdict is not CheckVerdict.SKIPPED]
        else:
            reasons, evidence_list = [reason or ReasonCode.INTERNAL_ERROR], [evidence or stop]
        usage = total_usage(t.usage for t in st.turns) if st.turns else Usage()
        status: TaskStatus = "retained" if report is not None and report.verdict is GateVerdict.RETAINED else (
            "error" if stop in ("model_failed", "infra_failed", "crashed") and report is None else "rejected")
        outcome = {"task": self.ctx.task_name, "candidate": self.candidate, "stop": stop, "status": status,
                   "reasons": [r.value for r in reasons], "frozen": self.draft.frozen, "metrics": self.metrics}
        atomic_write_text(self.trajectory, self.recorder.finish(outcome).to_json() + "\n")
        run = CreatorRun(candidate=self.candidate, status=status, reasons=reasons, evidence=evidence_list,
                         stop=stop, frozen=self.draft.frozen, turns=len([t for t in st.turns if t.usage.calls]),
                         tool_calls=st.tool_calls, usage=usage, seconds=round(seconds, 3),
                         model_seconds=round(sum(t.seconds for t in st.turns), 3),
                         tool_seconds=round(st.tool_seconds, 3), gate_runs=st.gate_runs, repairs=st.repairs,
                         refusals=dict(self.draft.refusals), trajectory=str(self.trajectory))
        log.info("creator task=%s candidate=%d stop=%s status=%s reasons=%s turns=%d tokens=%d", self.ctx.task_name,
                 self.candidate, stop, status, [r.value for r in reasons], run.turns, st.tokens())
        return SessionResult(stop, reasons, evidence_list, report, self.draft.frozen, self.blueprint, self.metrics,
                             self.flavour(), run)


def trial_cheats(value: Any) -> dict[str, str]:
    """`check`'s `cheats` argument: name -> bash script; RefusalError naming what is wrong."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise RefusalError("refused: `cheats` is an object mapping a name to a bash script")
    bad = [k for k in value if not CHEAT_NAME.match(k.removesuffix(".sh"))]
    if bad:
        raise RefusalError(f"refused: cheat names {bad[:5]} must match {CHEAT_NAME.pattern} (without .sh)")
    return {k.removesuffix(".sh"): v for k, v in value.items()}


def cheats_at_work(report: GateReport) -> tuple[list[str], list[str]]:
    """(cheats that left a non-empty changed file on disk, cheats that did not): an empty or no-op cheat tests
    nothing, so it does not count toward the freeze's MIN_CHEATS (the rule is stated in the creator's prompt)."""
    mine = [a for a in report.cheats if a.kind is AttemptKind.CHEAT and a.name.startswith("cheats/")]
    return [a.name for a in mine if a.work], [a.name for a in mine if not a.work]


def own_cheats_per_metric(report: GateReport) -> GateReport:
    """The harness's rule on the model's own cheats (stated in its prompt): judged metric by metric like the
    skill-blind baselines, not only by the gate's mean. A blind reviewer found a creator's cheat earning 0.65 on one
    metric (mean 0.20) and another 1.0 on one: such a metric pays for shortcuts."""
    if report.verdict is not GateVerdict.RETAINED:
        return report
    passed = [(a.name, note) for a in report.cheats if a.kind is AttemptKind.CHEAT
              for failed, note in [blind.judge(a.metrics)] if failed]
    if not passed:
        return report
    check = CheckResult(name="cheats_per_metric", verdict=CheckVerdict.FAIL, reason=ReasonCode.SHORTCUT_PASSED,
                        evidence="; ".join(f"{name}: {note}" for name, note in passed)[:2000])
    return report.model_copy(update={"verdict": GateVerdict.REJECTED, "reason": ReasonCode.SHORTCUT_PASSED,
                                     "checks": [*report.checks, check]})


def blueprint_from(a: dict[str, Any], ctx: CreationContext, view: SkillView, patterns: list[DifficultyPattern],
                   *, strict: bool = True) -> TaskBlueprint:
    """The stored contract from set_blueprint's arguments; RefusalError listing every problem found. `strict`: a
    rule's numbers must be in the lines it cites (creator/grounding.py)."""
    problems: list[str] = []
    preds: list[Predicate] = []
    for i, r in enumerate(a.get("rules") or []):
        try:
            ref = view.cite(str(r.get("source", "")))
            invented = unsourced_numbers(str(r.get("statement", "")), view.cited_text(str(r.get("source", "")))) \
                if strict else []
        except ValueError as e:
            problems.append(f"rule {i + 1}: {e}")
            continue
        if invented:
            problems.append(f"rule {i + 1}: the number(s) {', '.join(invented)} are not in "
                            f"{r.get('source')}: a deciding rule is the skill's own, so cite the lines that state "
                            "them, or leave them out of the rule")
            continue
        try:
            preds.append(Predicate(id=f"R{i + 1}", kind=r.get("kind", "format"), subject=str(r.get("statement"))[:200],
                                   statement=str(r.get("statement", "")), source=ref))
        except ValueError as e:
            problems.append(f"rule {i + 1}: {str(e)[:200]}")
    metrics = [m for m in a.get("metrics") or [] if isinstance(m, dict)]
    names = [str(m.get("name", "")) for m in metrics]
    if len(set(names)) != len(names):
        problems.append(f"metric names repeat: {names}")
    pool = {p.id: p for p in patterns}
    bad = [c.get("pattern") for c in a.get("challenges") or [] if c.get("pattern") not in pool]
    if bad:
        problems.append(f"unknown difficulty patterns {bad}; the brief names the ones to instantiate")
    if not preds and not problems:
        problems.append("at least one rule, cited from the skill")
    if problems:
        raise RefusalError("refused: blueprint not set: " + "; ".join(problems))
    ids = {p.id for p in preds}
    s = ctx.sample
    challenges = [Challenge(pattern=c["pattern"], dimension=pool[c["pattern"]].dimension,
                            effect=pool[c["pattern"]].effect, instantiation=str(c.get("instantiation", "")))
                  for c in a.get("challenges") or []]
    used = {c.pattern for c in challenges}
    realised = s.difficulty_pattern in used
    dropped = [p for p in s.added_patterns if p not in used]  # a hardening round's patterns left out: recorded
    fallback = "; ".join(filter(None, ["" if realised else f"the creator did not instantiate {s.difficulty_pattern}",
                                       "required by hardening but not instantiated: " + ", ".join(dropped)
                                       if dropped else ""]))
    try:
        return TaskBlueprint(
            task_name=ctx.task_name, skill_id=ctx.skill.skill_id, workflow=ctx.workflow.name,
            objective=str(a["objective"]), shape="llm", archetype=s.archetype,
            primary_verifier_pattern=s.primary_verifier_pattern, capability_dimension=s.capability_dimension,
            axes=AxisRealisation(sampled_archetype=s.archetype, sampled_verifier=s.primary_verifier_pattern,
                                 sampled_pattern=s.difficulty_pattern, pattern_fallback_reason=fallback),
            predicates=preds, challenges=challenges,
            boundary=InformationBoundary(discover=[str(x) for x in a.get("discover") or []]),
            acceptance=[Criterion(metric=str(m["name"]), checks=str(m.get("checks", "")),
                                  predicates=[r for r in m.get("rules") or [] if r in ids]) for m in metrics],
            complexity=Complexity(level=s.complexity, files_to_read=max(1, int(a.get("files_to_read") or 1)),
                                  rules_in_play=len(preds), dependent_steps=max(1, int(a.get("dependent_steps") or 1)),
                                  items=max(1, int(a.get("items") or 1))),
            deliverables=[str(x) for x in a.get("deliverables") or []], naive_failure=str(a.get("naive_failure", "")))
    except (ValueError, TypeError, KeyError) as e:
        raise RefusalError(f"refused: blueprint not set: {str(e)[:600]}") from e

