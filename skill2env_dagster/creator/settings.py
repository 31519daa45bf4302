"""Budgets and bounds of the creator agent: one place for every limit the harness enforces and the prompt states."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.envconfig import settings_from_env
from skill2env_dagster.reasons import ReasonCode

ENV_PREFIX = "S2E_CREATOR_"


class CreatorLimits(BaseModel):
    """Per candidate: model turns, tokens and wall time (each recorded), per-command bounds, what is shown back.

    A capable model that sends several tool calls per turn needs few turns; the defaults leave room for a model
    that checks its draft a few times. `max_candidates` bounds how many fresh candidates a workflow variant gets
    when the gate rejects a frozen one (item: a weak verifier is replaced, never shipped)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=40, ge=2, le=400, description="Model turns per candidate.")
    max_total_tokens: int = Field(default=2_000_000, ge=10_000, description="Prompt + completion tokens per "
                                  "candidate (each turn's prompt carries the whole conversation).")
    max_wall_sec: float = Field(default=7200.0, gt=0, description="Wall time per candidate (model, tools, gates).")
    max_tokens_per_turn: int = Field(default=16_000, ge=256, description="Completion tokens one turn may use.")
    command_timeout_sec: float = Field(default=120.0, gt=0, le=1800, description="Per `run` command.")
    output_head_chars: int = Field(default=2500, ge=200, description="Kept from the start of a command's output.")
    output_tail_chars: int = Field(default=2500, ge=200, description="Kept from the end of a command's output.")
    loop_limit: int = Field(default=3, ge=2, le=10, description="The same failing call this many times in a row, "
                            "with no change to the draft in between, ends the candidate (creator_loop).")
    nudges: int = Field(default=2, ge=0, le=5, description="Replies without a tool call before the task is "
                        "complete that are answered with a reminder; one more ends the candidate.")
    max_candidates: int = Field(default=2, ge=1, le=5, description="Candidates per workflow variant: a frozen "
                                "candidate the gate rejects is replaced by a new one that is shown the evidence.")
    view_chars: int = Field(default=60_000, ge=4000, description="Characters of the numbered skill files shown "
                            "up front; the rest is read with `read_skill`.")
    temperature: float = Field(default=0.2, ge=0, le=2)
    strict: bool = Field(default=True, description="The harness rules that keep a task about its skill (stated in "
                         "the prompt, creator/rules.py): the freeze needs a retained pre-freeze trial with the "
                         "model's naive cheats on the draft as it is, the world may not repeat the skill's lines, "
                         "and a blueprint rule's numbers must be in the lines it cites. Off only to replay "
                         "transcripts recorded before them.")


def limits_from_env(env: Mapping[str, str] | None = None) -> CreatorLimits:
    """CreatorLimits from `S2E_CREATOR_*` (e.g. S2E_CREATOR_MAX_TURNS); InputError naming a bad variable."""
    return settings_from_env(CreatorLimits, ENV_PREFIX, env, reason=ReasonCode.LLM_MISCONFIGURED)
