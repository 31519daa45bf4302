"""Chat with tools: one model turn that may answer with tool calls, for the solver agent.

`ToolChat` is an `LLMClient` with one more call, `turn()`. It shares the client's transport and its whole failure
policy (`llm.failures.classify`: what to retry, what is configuration, remembered once per endpoint; backoff
with Retry-After; usage on every path; the key redacted from every message), but not `complete_json`'s cache or
schema checks: k attempts at temperature > 0 must differ, and a malformed tool call is the policy's mistake to
be shown back to it, not a reason to re-ask.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.failures import classify, is_client_error
from skill2env_dagster.models.plan import Usage

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


class ToolChat(LLMClient):
    """One endpoint, one model; `turn()` is a single logical call (retries inside)."""

    def turn(self, messages: list[ChatMessage], tools: list[dict[str, Any]], *, temperature: float | None = None,
             max_tokens: int | None = None, purpose: str = "agent") -> ToolTurn:
        """The model's next turn; raises LLMError (carrying the usage of failed requests) when it cannot be had."""
        request: dict[str, Any] = {
            "model": self.config.model, "messages": messages, "tools": tools, "tool_choice": "auto",
            "temperature": self.config.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.config.max_tokens}
        start, attempt, failed = time.perf_counter(), 0, 0
        while True:
            known = self._endpoint.broken()
            if known is not None:  # reported when first seen; fail fast without another request
                raise LLMError(known.reason, f"{purpose}: {known.detail}", usage=Usage(failed_calls=failed))
            try:
                resp = self._sdk.chat.completions.create(**request, extra_headers=self._headers)
            except Exception as e:
                if not is_client_error(e):
                    raise
                failed += 1
                failure = classify(e, self.config)
                if failure.action == "retry" and attempt < self.config.max_retries:
                    self._wait(e, attempt, purpose)
                    attempt += 1
                    continue
                raise self._give_up(failure, self._safe(failure.detail), purpose, attempt,
                                    Usage(failed_calls=failed)) from e
            out = self._parse(resp)
            out.usage += Usage(failed_calls=failed)
            out.seconds = time.perf_counter() - start
            return out

    def _parse(self, resp: Any) -> ToolTurn:
        choices = getattr(resp, "choices", None) or []
        msg = choices[0].message if choices else None
        u = getattr(resp, "usage", None)
        pt, ct = int(getattr(u, "prompt_tokens", 0) or 0), int(getattr(u, "completion_tokens", 0) or 0)
        usage = Usage(calls=1, prompt_tokens=pt, completion_tokens=ct, cost_usd=self.config.cost(pt, ct))
        calls = [RequestedCall(call_id=str(getattr(c, "id", "") or f"call_{i}"),
                               name=str(getattr(getattr(c, "function", None), "name", "") or ""),
                               arguments=str(getattr(getattr(c, "function", None), "arguments", "") or ""))
                 for i, c in enumerate(getattr(msg, "tool_calls", None) or [])]
        return ToolTurn(content=str(getattr(msg, "content", "") or ""),
                        reasoning=getattr(msg, "reasoning_content", None) if msg is not None else None,
                        calls=calls, finish_reason=choices[0].finish_reason if choices else None,
                        model=str(getattr(resp, "model", "") or self.config.model), usage=usage)
