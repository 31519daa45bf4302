"""Recorded transcripts of a capable model authoring tasks, replayed through the creator agent and the gates.

A transcript (tests/fixtures/creator_transcripts/*.json) holds what the creator needs to rebuild the candidate's
context (the corpus skill folder, the workflow and axis sample it was given, the base images the model saw) and,
per candidate, every turn the model sent: its text and its tool calls, in order. `ReplayChat` answers the agent's
requests with those turns; a request with only the system prompt and the brief starts the next candidate. The
base images' digests differ between machines, so a recorded reference is replaced by this machine's one in every
argument. `transcript_from` builds a transcript from a run's ATIF trajectories (benchmarks/bench_creator.py
--export-transcripts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skill2env_dagster.llm.tools import RequestedCall, ToolTurn
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.models.task import TaskBundle

Turn = dict[str, Any]  # {"content": str, "calls": [{"name": str, "arguments": {...}}]}


def turns_of(trajectory: Path) -> list[Turn]:
    """The model's turns of one candidate, from its ATIF trajectory."""
    t = AtifTrajectory.model_validate_json(trajectory.read_text())
    return [{"content": s.message if isinstance(s.message, str) else "",
             "calls": [{"name": c.function_name, "arguments": c.arguments} for c in s.tool_calls or []]}
            for s in t.steps if s.source == "agent" and s.metrics is not None]


def transcript_from(bundle: TaskBundle, skill_folder: str, workflow: dict[str, Any], sample: dict[str, Any],
                    base_images: dict[str, str]) -> dict[str, Any]:
    return {"skill_folder": skill_folder, "task_name": bundle.task_name, "workflow": workflow, "sample": sample,
            "base_images": base_images, "recorded": {"statuses": [r.status for r in bundle.creator],
                                                     "turns": [r.turns for r in bundle.creator]},
            "candidates": [turns_of(Path(r.trajectory)) for r in bundle.creator]}


class ReplayChat:
    """Serves a transcript's turns (see module docstring)."""

    def __init__(self, transcript: dict[str, Any], base_images: dict[str, str]) -> None:
        self.candidates: list[list[Turn]] = transcript["candidates"]
        self.swap = {old: base_images[f] for f, old in transcript["base_images"].items() if f in base_images}
        self.candidate, self.n = -1, 0

    def _text(self, value: str) -> str:
        for old, new in self.swap.items():
            value = value.replace(old, new)
        return value

    def turn(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **_: Any) -> ToolTurn:
        if len(messages) == 2:  # system + brief: the next candidate
            self.candidate, self.n = self.candidate + 1, 0
        turns = self.candidates[self.candidate]
        usage = Usage(calls=1, prompt_tokens=sum(len(str(m.get("content") or "")) for m in messages) // 4)
        if self.n >= len(turns):
            return ToolTurn(content="(the recorded conversation ended here)", usage=usage)
        t = turns[self.n]
        self.n += 1
        calls = [RequestedCall(call_id=f"r{self.candidate}_{self.n}_{i}", name=c["name"],
                               arguments=self._text(json.dumps(c["arguments"])))
                 for i, c in enumerate(t["calls"])]
        return ToolTurn(content=t["content"], calls=calls, usage=usage)
