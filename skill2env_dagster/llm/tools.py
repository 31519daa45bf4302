"""Chat with tools: one model turn that may answer with tool calls, for the solver agent.

Kept apart from `LLMClient` (structured JSON replies) because an agent turn is neither cached nor validated
against a schema: k attempts at temperature > 0 must differ, and a malformed tool call is the policy's mistake to
be shown back to it, not a reason to re-ask. Transient failures are retried with the client's own policy
(`llm.retry`: which errors are transient, backoff with Retry-After, reason codes); a truncated or garbled body
counts as transient; a turn that cannot be had raises LLMError with the reason code.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.pricing import call_cost
from skill2env_dagster.llm.retry import backoff_delay, exc_headers, is_transient, reason_for, retry_after_seconds
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import LLMError, ReasonCode

log = logging.getLogger(__name__)
ChatMessage = dict[str, Any]


class RequestedCall(BaseModel):
    """A tool call as the model sent it; `arguments` is the raw text, which may not be valid JSON."""

    model_config = ConfigDict(extra="forbid")

    call_id: str
    name: str
    arguments: str


class ToolTurn(BaseModel):
    """One assistant turn: text, optional reasoning, tool calls, and what it cost."""

    model_config = ConfigDict(extra="forbid")

    content: str = ""
    reasoning: str | None = None
    calls: list[RequestedCall] = Field(default_factory=list)
    finish_reason: str | None = None
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    seconds: float = Field(default=0.0, ge=0, description="Wall time of the call, retries and backoff included.")

    def as_message(self) -> ChatMessage:
        """The assistant message to append to the conversation (OpenAI chat format)."""
        msg: ChatMessage = {"role": "assistant", "content": self.content}
        if self.calls:
            msg["tool_calls"] = [{"id": c.call_id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in self.calls]
        return msg


def redact(text: str, secret: str) -> str:
    """Error text for logs and records, truncated and with the key removed (servers may echo it)."""
    text = text[:400]
    return text.replace(secret, "***") if secret else text


class ToolChat:
    """One endpoint, one model; `turn()` is a single logical call (retries inside)."""

    def __init__(self, config: LLMConfig, *, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None) -> None:
        if config.offline:
            raise LLMError(ReasonCode.LLM_UNAVAILABLE, "no base_url/model configured for tool calling")
        self.config = config
        self._sleep, self._rng = sleep, rng or random.Random()
        self._sdk = openai.OpenAI(base_url=config.base_url, api_key=config.api_key.get_secret_value() or "unused",
                                  timeout=config.timeout, max_retries=0)

    def turn(self, messages: list[ChatMessage], tools: list[dict[str, Any]], *, temperature: float | None = None,
             max_tokens: int | None = None, purpose: str = "agent") -> ToolTurn:
        """The model's next turn; raises LLMError (with `.usage` of failed attempts) when it cannot be had."""
        request = {"model": self.config.model, "messages": messages, "tools": tools, "tool_choice": "auto",
                   "temperature": self.config.temperature if temperature is None else temperature,
                   "max_tokens": max_tokens or self.config.max_tokens}
        start, attempt = time.perf_counter(), 0
        while True:
            try:
                resp = self._sdk.chat.completions.create(**request)  # type: ignore[call-overload]  # dict of kwargs
            except (openai.OpenAIError, ValueError) as e:  # ValueError: a truncated or garbled body
                delay = self._give_up_or_delay(e, attempt, purpose)
                log.warning("tool chat transient failure purpose=%s attempt=%d err=%s retry_in=%.2fs",
                            purpose, attempt + 1, type(e).__name__, delay)
                self._sleep(delay)
                attempt += 1
                continue
            out = self._parse(resp)
            out.seconds = time.perf_counter() - start
            return out

    def _give_up_or_delay(self, exc: Exception, attempt: int, purpose: str) -> float:
        """Backoff before the next attempt, or the LLMError that ends the turn."""
        secret = self.config.api_key.get_secret_value()
        transient = is_transient(exc) or not isinstance(exc, openai.OpenAIError)
        if not transient or attempt >= self.config.max_retries:
            reason = reason_for(exc) if transient else ReasonCode.LLM_UNAVAILABLE
            raise LLMError(reason, f"{purpose}: after {attempt + 1} attempt(s): "
                                   f"{redact(f'{type(exc).__name__}: {exc}', secret)}") from exc
        return backoff_delay(attempt, base=self.config.backoff_base, cap=self.config.backoff_cap,
                             retry_after=retry_after_seconds(exc_headers(exc)), rng=self._rng)

    def _parse(self, resp: Any) -> ToolTurn:
        choices = getattr(resp, "choices", None) or []
        msg = choices[0].message if choices else None
        u = getattr(resp, "usage", None)
        pt, ct = int(getattr(u, "prompt_tokens", 0) or 0), int(getattr(u, "completion_tokens", 0) or 0)
        usage = Usage(calls=1, prompt_tokens=pt, completion_tokens=ct,
                      cost_usd=call_cost(self.config.prices, self.config.model, pt, ct))
        calls = [RequestedCall(call_id=str(getattr(c, "id", "") or f"call_{i}"),
                               name=str(getattr(getattr(c, "function", None), "name", "") or ""),
                               arguments=str(getattr(getattr(c, "function", None), "arguments", "") or ""))
                 for i, c in enumerate(getattr(msg, "tool_calls", None) or [])]
        return ToolTurn(content=str(getattr(msg, "content", "") or ""),
                        reasoning=getattr(msg, "reasoning_content", None) if msg is not None else None,
                        calls=calls, finish_reason=choices[0].finish_reason if choices else None,
                        model=str(getattr(resp, "model", "") or self.config.model), usage=usage)
