"""The model-backed task creator: an agent that authors each task in a sandbox, in the frozen order the harness
enforces, checking its draft with the gate's own stages (see agent.py, session.py)."""

from skill2env_dagster.creator.agent import CreatorAgent, creator_prompts_version
from skill2env_dagster.creator.settings import CreatorLimits

__all__ = ["CreatorAgent", "CreatorLimits", "creator_prompts_version"]
