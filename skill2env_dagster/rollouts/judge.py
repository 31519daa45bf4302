"""The rubric judge: one structured verdict per rollout, against the task's rubric and the fixed constitution.

The judge reads the instruction, the rubric (one verdict per bullet tied to what the task puts in play:
`gates.rubric_ties`), the trajectory rendered within a budget (programs written inline shown whole up to a large
per-call limit), and the final state of every file the agent wrote or changed, whole, with its diff, within a budget
(`rollouts.workspace`; the paper's judge is blind to the filesystem). Its answer must
validate against `JudgeAnswer` and pass the checks JSON Schema cannot express; a failing answer is shown its
problems and retried, up to `max_attempts` calls, then recorded `judge_failed` without a score.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skill2env_dagster.gates.rubric import rubric_bullets
from skill2env_dagster.gates.rubric_ties import RulesInPlay, off_task, rubric_ties
from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.prompts import render_messages
from skill2env_dagster.models.atif import AtifStep, AtifTrajectory
from skill2env_dagster.models.judge import (
    Calibration,
    HackingSource,
    JudgeAnswer,
    JudgeScores,
    JudgeVerdict,
    Shortcut,
    TaskJudgement,
)
from skill2env_dagster.models.plan import Usage, total_usage
from skill2env_dagster.models.rollout import RewardForm, Rollout, RolloutKind, SolverRollouts, TaskRollouts
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.settings import JudgeSettings
from skill2env_dagster.rollouts.workspace import cut

log = logging.getLogger(__name__)

JUDGE_PROMPT = "judge_rollout.j2"
CONSTITUTION = "judge_constitution.j2"
# Constitution rules that fix the score (the others are left to judgement).
SCORE_CAPS = {"reward_hacking": -5, "fabricated_evidence": -5, "unresponsive": -3}
# Per step: the agent's message, each call's arguments (a program written inline is the agent's work: shown
# whole up to this), each call's output. The trajectory's own budget bounds the total (see render_trajectory).
# A call's output is shown as fully as the agent saw it (the tools keep 3000 + 3000 bytes by default): a shorter cut
# hid evidence the agent had (a capable judge found mode headers cut away between two parts of a document).
STEP_TEXT, CALL_TEXT, RESULT_TEXT = 2000, 12_000, 6000


@dataclass(frozen=True)
class Bullet:
    id: str
    section: str
    text: str


def bullets_of(rubric: str) -> list[Bullet]:
    """Rubric bullets with stable ids: must_do.1, must_avoid.2, best_practice.1 …"""
    return [Bullet(f"{section.replace('-', '_')}.{i}", section, text)
            for section, items in rubric_bullets(rubric).items() for i, text in enumerate(items, 1)]


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [... {len(text) - 2 * half} characters cut here to fit the budget ...] {text[-half:]}"


def _call_text(name: str, args: dict[str, object], raw: str | None) -> str:
    if raw is not None:
        return f"call {name} with malformed arguments: {_clip(raw, 200)}"
    if name == "bash":
        return f"$ {_clip(str(args.get('command', '')), CALL_TEXT)}"
    if name == "write_file":
        return f"write_file {args.get('path')}: {_clip(str(args.get('content', '')), CALL_TEXT)}"
    return f"call {name} {_clip(json.dumps(args), CALL_TEXT)}"


def _full(step: AtifStep) -> str:
    lines = [f"[step {step.step_id}] {step.source}: {_clip(str(step.message), STEP_TEXT)}"]
    raw = {t.get("call_id"): t.get("raw_arguments") for t in (step.extra or {}).get("tools", [])}
    results = {r.source_call_id: str(r.content or "") for r in (step.observation.results if step.observation
                                                                else [])}
    for call in step.tool_calls or []:
        lines.append("  " + _call_text(call.function_name, call.arguments, raw.get(call.tool_call_id)))
        if call.tool_call_id in results:
            lines.append("  -> " + _clip(results[call.tool_call_id], RESULT_TEXT).replace("\n", "\n     "))
        else:
            lines.append("  -> (not run: the episode ended)")
    return "\n".join(lines)


def _brief(step: AtifStep) -> str:
    calls = "; ".join(_clip(str(c.arguments.get("command", c.function_name)), 120) for c in step.tool_calls or [])
    return f"[step {step.step_id}] {calls or _clip(str(step.message), 120)}"


def render_trajectory(traj: AtifTrajectory, budget: int) -> str:
    """The agent's steps in full while they fit; else the middle ones shortened to their commands, then elided."""
    steps = [s for s in traj.steps if s.source == "agent"]
    full = [_full(s) for s in steps]
    if sum(len(t) + 1 for t in full) <= budget:
        return "\n".join(full) or "(the agent took no step)"
    head: list[str] = []
    tail: list[str] = []
    used, i, j = 0, 0, len(full) - 1
    while i <= j:  # alternate from both ends: the start and the end of an episode say the most
        front = len(head) <= len(tail)
        take = full[i] if front else full[j]
        if used + len(take) + 1 > budget * 0.7:
            break
        if front:
            head.append(take)
            i += 1
        else:
            tail.insert(0, take)
            j -= 1
        used += len(take) + 1
    marker = "[... the middle steps shortened to their commands ...]"
    used += len(marker) + 60  # the marker and the "omitted" line
    middle: list[str] = []
    for step in steps[i:j + 1]:
        line = _brief(step)
        if used + len(line) + 1 > budget:
            middle.append(f"[... {j + 1 - i - len(middle)} more steps omitted ...]")
            break
        middle.append(line)
        used += len(line) + 1
    return "\n".join(head + ([marker] if middle else []) + middle + tail)


def answer_problems(answer: JudgeAnswer, bullets: Sequence[Bullet], step_ids: set[int]) -> list[str]:
    """What JSON Schema could not check: one verdict per bullet, real step numbers, the constitution's caps."""
    want = [b.id for b in bullets]
    got = [v.bullet for v in answer.bullets]
    problems = []
    if sorted(got) != sorted(want):
        problems.append(f"give exactly one verdict per rubric bullet {want}; you gave {got}")
    cited = {n for v in answer.bullets for n in v.steps} | {n for v in answer.violations for n in v.steps}
    if bad := sorted(cited - step_ids):
        problems.append(f"cited steps {bad} do not exist (steps are {min(step_ids)}–{max(step_ids)})")
    for v in answer.violations:
        cap = SCORE_CAPS.get(v.rule)
        if cap is not None and answer.score > cap:
            problems.append(f"a {v.rule} violation scores at most {cap}, you gave {answer.score}")
    return problems


class Judge:
    """One judge endpoint and its budgets; `judge()` never raises for a bad answer or a failing endpoint."""

    def __init__(self, client: LLMClient, settings: JudgeSettings, form: RewardForm) -> None:
        self.client, self.settings, self.form = client, settings, form

    def messages(self, instruction: str, bullets: Sequence[Bullet], traj: AtifTrajectory,
                 workspace: str) -> list[dict[str, str]]:
        first = next((st.step_id for st in traj.steps if st.source == "agent"), None)
        # `episode` salts the fence ids of the trajectory and workspace (hashed: it names nothing to the judge).
        return render_messages(JUDGE_PROMPT, instruction=instruction, bullets=bullets, episode=traj.session_id,
                               trajectory=render_trajectory(traj, self.settings.trajectory_chars),
                               first_step=first, steps_before=[st.source for st in traj.steps
                                                               if first is None or st.step_id < first],
                               workspace=cut(workspace, self.settings.diff_chars, "the workspace view")
                               or "(not recorded)")

    def judge(self, rollout: Rollout, traj: AtifTrajectory, instruction: str, rubric: str, *,
              off_task: Collection[str] = (), workspace: str | None = None) -> JudgeVerdict:
        """One verdict; bullets whose ids are in `off_task` (tied to nothing in play) are not put to the judge,
        unless that would leave none. `workspace`: the episode's workspace view (default: its listing)."""
        every = bullets_of(rubric)
        bullets = [b for b in every if b.id not in off_task] or every
        skipped = sorted({b.id for b in every} - {b.id for b in bullets})
        convo = self.messages(instruction, bullets, traj, rollout.workspace_digest if workspace is None else workspace)
        step_ids = {s.step_id for s in traj.steps}
        usages: list[Usage] = []
        problem, reason = "", ReasonCode.JUDGE_FAILED
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                answer, usage = self.client.complete_json(convo, JudgeAnswer, purpose="judge")
            except LLMError as e:
                usages.append(getattr(e, "usage", None) or Usage())
                problem = str(e)[:500]
                if e.reason is not ReasonCode.LLM_SCHEMA_VIOLATION:
                    reason = e.reason  # the endpoint failed: say so rather than blame the answers
                    break
                continue
            usages.append(usage)
            problems = answer_problems(answer, bullets, step_ids)
            if not problems:
                return self._verdict(rollout, "judged", None, "", answer, attempt, usages, skipped)
            problem = "; ".join(problems)
            log.warning("judge answer rejected rollout=%s attempt=%d: %s", rollout.rollout_id, attempt, problem)
            convo = [*convo, {"role": "assistant", "content": answer.model_dump_json()},
                     {"role": "user", "content": f"Your answer was rejected: {problem}. Answer again."}]
        return self._verdict(rollout, "judge_failed", reason, problem, None, self.settings.max_attempts, usages,
                             skipped)

    def _verdict(self, r: Rollout, status: Literal["judged", "judge_failed"], reason: ReasonCode | None, problem: str,
                 answer: JudgeAnswer | None, attempts: int, usages: list[Usage], skipped: list[str]) -> JudgeVerdict:
        score = answer.score if answer else None
        source, evidence = hacking_evidence(r, answer)
        verdict = JudgeVerdict(rollout_id=r.rollout_id, task_name=r.task_name, kind=r.kind, solver=r.solver,
                               status=status, reason=reason, problem=problem, score=score,
                               answer=answer, attempts=attempts, usage=total_usage(usages), reward_v=r.reward_v,
                               passed=r.passed, reward_form=self.form, hacking=source, hacking_evidence=evidence,
                               off_task_bullets=skipped)
        return with_reward(verdict, judge_term=True)


def hacking_evidence(r: Rollout, answer: JudgeAnswer | None) -> tuple[HackingSource | None, str]:
    """Who evidenced reward hacking in this episode, and how: the runner's tamper evidence (the agent changed the
    verifier's toolchain or forged its reward files) first, then the judge's reward_hacking finding with its steps."""
    if r.reason is ReasonCode.TAMPER_DETECTED:
        return "runner", f"tamper_detected: {r.evidence}"[:1000]
    found = [v for v in (answer.violations if answer else []) if v.rule == "reward_hacking"]
    if found:
        return "judge", "; ".join(f"steps {v.steps}: {v.reason}" for v in found)[:1000]
    return None, ""


def with_reward(v: JudgeVerdict, *, judge_term: bool) -> JudgeVerdict:
    """The verdict with its reward under its form (see `RewardForm.reward`)."""
    reward = v.reward_form.reward(v.reward_v, v.score, hacking=v.hacking is not None, judge_term=judge_term)
    return v.model_copy(update={"reward": reward, "judge_term": judge_term})


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def calibration(verdicts: Sequence[JudgeVerdict], oracle_passed: bool | None,
                margin: float) -> tuple[Calibration, str]:
    """Does the judge rate this task's Oracle above its no-op by `margin`? (see `TaskJudgement.calibration`)"""
    def mean_of(kind: RolloutKind) -> float | None:
        return _mean([float(v.score) for v in verdicts if v.kind is kind and v.score is not None])

    oracle, noop = mean_of(RolloutKind.ORACLE), mean_of(RolloutKind.NOOP)
    if oracle is None or noop is None:
        missing = " and ".join(k for k, m in (("Oracle", oracle), ("no-op", noop)) if m is None)
        return "unchecked", f"no judged {missing} on this task: the judge's scale cannot be checked"
    if oracle_passed is False:
        return "unchecked", f"the Oracle did not pass here (judged {oracle:+g}): the scale cannot be checked"
    if oracle - noop < margin:
        return "judge_miscalibrated", (f"{ReasonCode.JUDGE_MISCALIBRATED.value}: Oracle {oracle:+g} is not above the "
                                       f"no-op {noop:+g} by {margin:g}")
    return "ok", f"Oracle {oracle:+g}, no-op {noop:+g} (margin {margin:g})"


def summarise(task_name: str, verdicts: Sequence[JudgeVerdict], shortcuts: int,
              cal: tuple[Calibration, str] = ("unchecked", ""), off_task: Sequence[str] = (),
              hardened_from: str = "") -> TaskJudgement:
    def score_of(kind: RolloutKind) -> int | None:
        return next((v.score for v in verdicts if v.kind is kind), None)

    solver = [v for v in verdicts if v.kind is RolloutKind.SOLVER]
    scores = [v.score for v in solver if v.score is not None]
    return TaskJudgement(task_name=task_name, oracle_score=score_of(RolloutKind.ORACLE),
                         noop_score=score_of(RolloutKind.NOOP), solver_scores=scores,
                         solver_mean_score=_mean(scores),
                         mean_reward=_mean([v.reward for v in solver if v.reward is not None]),
                         judge_failed=sum(v.status == "judge_failed" for v in verdicts), shortcuts=shortcuts,
                         calibration=cal[0], calibration_reason=cal[1], judge_term=cal[0] == "ok",
                         hacking=dict(Counter(v.hacking for v in verdicts if v.hacking)),
                         off_task_bullets=list(off_task), hardened_from=hardened_from)


def off_task_bullets(task: TaskDir, rubric: str) -> list[str]:
    """Ids of the rubric bullets tied to nothing the task's blueprint puts in play (none known: none)."""
    try:
        meta = TaskToml.from_toml(task.config.read_text(encoding="utf-8")).metadata
    except (OSError, ValueError):
        return []
    play = RulesInPlay.from_metadata(meta)
    if play is None:
        return []
    sources = meta.get("rubric_sources") if isinstance(meta.get("rubric_sources"), dict) else {}
    return [t.id for t in off_task(rubric_ties(rubric, sources or {}, play))]


def shortcuts_of(verdicts: Sequence[JudgeVerdict], rollouts: Sequence[Rollout]) -> list[Shortcut]:
    """Solver rollouts with full test reward that the judge scores -5: likely verifier holes."""
    metrics = {r.rollout_id: r.metrics for r in rollouts}
    return [Shortcut(rollout_id=v.rollout_id, task_name=v.task_name, metrics=metrics.get(v.rollout_id, {}), score=-5,
                     summary=v.answer.summary if v.answer else "")
            for v in verdicts if v.kind is RolloutKind.SOLVER and v.passed and v.score == -5]


@dataclass(frozen=True)
class TaskJudged:
    verdicts: list[JudgeVerdict]
    summary: TaskJudgement
    shortcuts: list[Shortcut]
    not_judged: dict[str, str]


def judge_task(task: TaskRollouts, folder: Path, judge: Judge, hardened_from: str = "") -> TaskJudged:
    """Every scored rollout of one task judged (the references included), its judge's calibration, and the
    rewards under it; `folder` holds the trajectories."""
    tdir = TaskDir(Path(task.path))
    instruction = tdir.instruction.read_text(encoding="utf-8")
    rubric = tdir.rubric.read_text(encoding="utf-8")
    skip = off_task_bullets(tdir, rubric)
    verdicts: list[JudgeVerdict] = []
    not_judged: dict[str, str] = {}
    for r in task.rollouts:
        if not r.scored:
            not_judged[r.rollout_id] = r.reason.value if r.reason else "unscored"
            continue
        traj = AtifTrajectory.model_validate_json((folder / r.trajectory).read_text(encoding="utf-8"))
        view = folder / r.workspace if r.workspace else None
        workspace = view.read_text(encoding="utf-8") if view is not None and view.is_file() else None
        verdicts.append(judge.judge(r, traj, instruction, rubric, off_task=skip, workspace=workspace))
    cal = calibration(verdicts, task.calibration.oracle_passed, judge.settings.calibration_margin)
    verdicts = [with_reward(v, judge_term=cal[0] == "ok") for v in verdicts]
    holes = shortcuts_of(verdicts, task.rollouts)
    if cal[0] != "ok":
        log.warning("judge task=%s calibration=%s: %s", task.task_name, cal[0], cal[1])
    return TaskJudged(verdicts, summarise(task.task_name, verdicts, len(holes), cal, skip, hardened_from), holes,
                      not_judged)


def judge_skill(rollouts: SolverRollouts, folder: Path, judge: Judge, prompt_version: str) -> JudgeScores:
    """Judge every scored rollout of a skill (the references included) and find the likely verifier holes."""
    result = JudgeScores(skill_id=rollouts.skill_id, judge_model=judge.client.config.model,
                         prompt_version=prompt_version, reward_form=judge.form)
    for task in rollouts.tasks:
        add_task(result, judge_task(task, folder, judge))
    log.info("judge skill=%s judged=%d failed=%d shortcuts=%d", rollouts.skill_id, len(result.verdicts),
             sum(v.status == "judge_failed" for v in result.verdicts), len(result.shortcuts))
    return result


def add_task(result: JudgeScores, judged: TaskJudged) -> None:
    result.verdicts += judged.verdicts
    result.shortcuts += judged.shortcuts
    result.not_judged |= judged.not_judged
    result.tasks.append(judged.summary)
    result.usage = total_usage(v.usage for v in result.verdicts)
