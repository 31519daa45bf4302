"""SFT export: judged solver trajectories with a combined reward above the threshold, as OpenAI chat JSONL.

Kept: solver rollouts (never the references) of every rolled-out task, hardened rebuilds included, whose reward r —
under the recorded reward form, r_V alone on a task whose judge failed its calibration — exceeds `min_reward`.
Left out, each with its reason in the manifest: evidenced hacking (`hacking`: the judge's reward_hacking finding or
the runner's tamper evidence; its reward is 0), unjudged or judge-failed rollouts, trajectories
with a malformed or unanswered tool call (they would teach broken calls or be invalid chat), duplicates (the
same sequence of tool calls on the same task: the best reward is kept), and rows whose text matches a configured
benchmark (the decontamination the tasks get, `export.decontam`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.export.decontam import TextDoc, check_contamination, load_benchmark_docs
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.models.atif import AtifStep, AtifTrajectory
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.judge import JudgeVerdict
from skill2env_dagster.models.rollout import Rollout, RolloutKind
from skill2env_dagster.models.sft import SftExcluded, SftManifest, SftRow
from skill2env_dagster.rollouts.rolled import RolledTask

log = logging.getLogger(__name__)
SFT_FILE = "sft.jsonl"


def _assistant(step: AtifStep) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": step.message if isinstance(step.message, str) else ""}
    if step.tool_calls:
        msg["tool_calls"] = [{"id": c.tool_call_id, "type": "function",
                              "function": {"name": c.function_name, "arguments": json.dumps(c.arguments)}}
                             for c in step.tool_calls]
    return msg


def to_chat(traj: AtifTrajectory) -> tuple[list[dict[str, Any]], str]:
    """OpenAI chat messages of a trajectory, or ([], why) when it cannot be faithful training data."""
    messages: list[dict[str, Any]] = []
    for step in traj.steps:
        if step.is_copied_context:
            continue
        if step.source != "agent":
            messages.append({"role": step.source, "content": step.message})
            continue
        tools = (step.extra or {}).get("tools", [])
        if any(t.get("malformed") for t in tools):
            return [], "malformed_tool_calls"
        if (step.extra or {}).get("not_run"):
            return [], "unanswered_tool_calls"
        messages.append(_assistant(step))
        for r in step.observation.results if step.observation else []:
            messages.append({"role": "tool", "tool_call_id": r.source_call_id, "content": str(r.content or "")})
    return messages, ""


def _action_key(messages: list[dict[str, Any]]) -> str:
    calls = [(c["function"]["name"], c["function"]["arguments"]) for m in messages for c in m.get("tool_calls", [])]
    return sha256_bytes(canonical_json(calls).encode())


@dataclass
class _Candidate:
    row: SftRow
    key: str


def _candidate(skill: str, r: Rollout, v: JudgeVerdict, folder: Path, min_reward: float) -> _Candidate | SftExcluded:
    def out(reason: str, detail: str = "") -> SftExcluded:
        return SftExcluded(rollout_id=r.rollout_id, task=r.task_name, reason=reason, detail=detail)

    if v.hacking is not None:
        return out("hacking", f"{v.hacking}: {v.hacking_evidence}"[:300])
    if v.status != "judged" or v.score is None or v.reward is None or r.reward_v is None:
        return out("judge_failed", v.problem[:300])
    if v.reward <= min_reward:
        return out("below_threshold", f"r = {v.reward}")
    try:
        traj = AtifTrajectory.model_validate_json((folder / r.trajectory).read_text(encoding="utf-8"))
    except (OSError, ValidationError) as e:
        return out("trajectory_unreadable", str(e)[:300])
    messages, why = to_chat(traj)
    if why:
        return out(why)
    row = SftRow(messages=messages, tools=traj.agent.tool_definitions or [], task=r.task_name, skill=skill,
                 rollout_id=r.rollout_id, solver=r.solver, model=r.model, reward=v.reward, reward_v=r.reward_v,
                 judge_score=v.score, reward_form=v.reward_form, judge_term=v.judge_term)
    return _Candidate(row, _action_key(messages))


def select_rows(tasks: Sequence[RolledTask], min_reward: float) -> tuple[list[SftRow], list[SftExcluded], int]:
    """Rows kept (deduplicated per task), rows left out, and how many judged solver rollouts were considered."""
    excluded: list[SftExcluded] = []
    best: dict[tuple[str, str], _Candidate] = {}
    considered = 0
    for rt in tasks:
        for r in rt.task.rollouts:
            if r.kind is not RolloutKind.SOLVER:
                continue
            v = rt.verdicts.get(r.rollout_id)
            if v is None:
                excluded.append(SftExcluded(rollout_id=r.rollout_id, task=r.task_name, reason="not_judged",
                                            detail=r.reason.value if r.reason else "no judge_scores"))
                continue
            considered += 1
            c = _candidate(rt.skill, r, v, rt.folder, min_reward)
            if isinstance(c, SftExcluded):
                excluded.append(c)
                continue
            slot = (r.task_name, c.key)
            kept = best.get(slot)
            if kept is None or c.row.reward > kept.row.reward:
                if kept is not None:
                    excluded.append(_dup(kept.row))
                best[slot] = c
            else:
                excluded.append(_dup(c.row))
    return [c.row for c in best.values()], excluded, considered


def _dup(row: SftRow) -> SftExcluded:
    return SftExcluded(rollout_id=row.rollout_id, task=row.task, reason="duplicate",
                       detail="same tool calls as a better-rewarded trajectory of this task")


def _text(row: SftRow) -> str:
    return "\n".join(str(m.get("content") or "") for m in row.messages if m["role"] in ("user", "assistant"))


def decontaminate(rows: list[SftRow], cfg: DecontamConfig) -> tuple[list[SftRow], list[SftExcluded]]:
    """Drop rows whose text matches a benchmark document (word n-gram Jaccard or containment)."""
    if not cfg.benchmark_paths or not rows:
        return rows, []
    report = check_contamination([TextDoc(r.rollout_id, _text(r)) for r in rows],
                                 load_benchmark_docs(cfg.benchmark_paths), cfg)
    flagged = {m.task_id: m for m in report.matches if m.flagged}
    kept = [r for r in rows if r.rollout_id not in flagged]
    out = [SftExcluded(rollout_id=r.rollout_id, task=r.task, reason="contaminated",
                       detail=f"{flagged[r.rollout_id].benchmark_id}: jaccard {flagged[r.rollout_id].jaccard:.2f}, "
                              f"containment {flagged[r.rollout_id].containment:.2f}")
           for r in rows if r.rollout_id in flagged]
    return kept, out


def write_jsonl(rows: Iterable[SftRow], path: Path) -> str:
    """Atomically; returns the file's digest."""
    text = "".join(r.model_dump_json() + "\n" for r in rows)
    atomic_write_text(path, text)
    return sha256_bytes(text.encode())


def export_sft(tasks: Sequence[RolledTask], out_dir: Path, min_reward: float, cfg: DecontamConfig) -> SftManifest:
    """Select, deduplicate, decontaminate and write `sft.jsonl` from every rolled-out task, hardened rebuilds
    included; the manifest says what happened to every row."""
    rows, excluded, considered = select_rows(tasks, min_reward)
    rows, dirty = decontaminate(rows, cfg)
    rows.sort(key=lambda r: (r.skill, r.task, r.rollout_id))
    path = out_dir / SFT_FILE
    digest = write_jsonl(rows, path)
    manifest = SftManifest(path=str(path), min_reward=min_reward, rows=len(rows),
                           tasks=len({(r.skill, r.task) for r in rows}), skills=len({r.skill for r in rows}),
                           candidates=considered, excluded=excluded + dirty,
                           decontamination_checked=bool(cfg.benchmark_paths), benchmark_paths=cfg.benchmark_paths,
                           digest=digest)
    log.info("sft rows=%d excluded=%s", manifest.rows, manifest.excluded_by_reason())
    return manifest
