"""LLM layer: OpenAI-compatible structured completions, response cache, usage/cost, prompt templates.

Never imports dagster; the Dagster adapter is `skill2env_dagster.resources.llm.LLMResource`.
"""

from skill2env_dagster.llm.client import LLMClient, SchemaViolation, parse_reply
from skill2env_dagster.llm.config import LLMConfig, Price
from skill2env_dagster.llm.pricing import call_cost, sum_usage
from skill2env_dagster.llm.prompts import prompt_version, render, render_messages, untrusted

__all__ = [
    "LLMClient",
    "LLMConfig",
    "Price",
    "SchemaViolation",
    "call_cost",
    "parse_reply",
    "prompt_version",
    "render",
    "render_messages",
    "sum_usage",
    "untrusted",
]
