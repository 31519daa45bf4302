"""LLM layer: OpenAI-compatible structured completions, the reply-schema contract, failure mapping, response cache,
endpoint memory, prompt templates.

Never imports dagster; the Dagster adapter is `skill2env_dagster.resources.llm.LLMResource`.
"""

from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig, from_env
from skill2env_dagster.llm.prompts import prompt_version, render, render_messages, untrusted
from skill2env_dagster.llm.schema import ReplyModel, SchemaViolationError, parse_reply, wire_schema

__all__ = [
    "LLMClient",
    "LLMConfig",
    "ReplyModel",
    "SchemaViolationError",
    "from_env",
    "parse_reply",
    "prompt_version",
    "render",
    "render_messages",
    "untrusted",
    "wire_schema",
]
