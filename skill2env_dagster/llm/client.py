"""Structured JSON completions from any OpenAI-compatible server (vLLM, NIM, OpenAI, a keyless local server).

`LLMClient.complete_json(messages, Schema, purpose=...)` returns a validated pydantic model and its Usage. It sends
the reply model's JSON schema (`llm.schema`) as a json_schema response format, or in the prompt in JSON mode once
the endpoint has said it cannot do json_schema (learned once per endpoint, `llm.endpoint`); validates every reply
and asks (bounded) for a repair on a violation; retries what a retry can fix and stops at once on configuration
errors (`llm.failures`); and caches validated replies on disk so an unchanged prompt costs nothing.

Every HTTP request is counted: tokens of every answered request (also when the reply is then rejected), failed
requests, and the cost when a price is configured. A raised LLMError carries that usage.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

import openai
from pydantic import BaseModel

from skill2env_dagster.llm.cache import CacheEntry, ResponseCache, cache_key
from skill2env_dagster.llm.config import LLMConfig, env_var
from skill2env_dagster.llm.endpoint import Endpoint, WireMode
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.failures import Failure, classify, is_client_error
from skill2env_dagster.llm.retry import backoff_delay, exc_headers, retry_after_seconds
from skill2env_dagster.llm.schema import (
    SchemaViolationError,
    parse_reply,
    repair_request,
    schema_instruction,
    wire_schema,
)
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode

M = TypeVar("M", bound=BaseModel)
Message = dict[str, str]
log = logging.getLogger(__name__)

# What a keyless server gets: no Authorization header at all (the SDK insists on some key, which is never sent).
_NO_AUTH: dict[str, Any] = {"Authorization": openai.Omit()}
_UNSENT_KEY = "no-key-configured"


class LLMClient:
    """One configured endpoint. Build it through `LLMResource.client()` or directly from an `LLMConfig`."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if config.offline:
            raise LLMError(ReasonCode.LLM_MISCONFIGURED, f"no model configured ({env_var('base_url')}, "
                           f"{env_var('model')}); use the offline generator")
        self.config = config
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._cache = ResponseCache(config.cache_dir or None)
        self._endpoint = Endpoint(config)
        secret = config.api_key.get_secret_value()
        self._headers: dict[str, Any] = {} if secret else _NO_AUTH
        self._sdk = openai.OpenAI(base_url=config.endpoint, api_key=secret or _UNSENT_KEY, timeout=config.timeout,
                                  max_retries=0)

    def complete_json(self, messages: list[Message], schema: type[M], *, purpose: str) -> tuple[M, Usage]:
        """Validated reply and usage; raises LLMError (see llm.failures for the codes) carrying the usage spent."""
        key = cache_key(self.config.base_url, self.config.model, messages, self._key_params(schema))
        hit = self._cache.get(key)
        if hit is not None:
            try:
                model = parse_reply(hit.content, schema)
                log.info("llm cache hit purpose=%s model=%s", purpose, self.config.model)
                return model, Usage(cache_hits=1)
            except SchemaViolationError:
                log.warning("llm cache entry no longer validates purpose=%s; calling the model", purpose)
        return self._complete_uncached(key, list(messages), schema, purpose)

    def _complete_uncached(self, key: str, convo: list[Message], schema: type[M], purpose: str) -> tuple[M, Usage]:
        spent = Usage()
        problem = ""
        for repair in range(self.config.max_repairs + 1):
            try:
                content, usage, finish = self._chat(convo, schema, purpose)
            except LLMError as e:
                e.usage = spent + (e.usage or Usage())
                raise
            spent += usage
            try:
                model = parse_reply(content, schema)
            except SchemaViolationError as e:
                problem = str(e) + (f" (the reply was cut at max_tokens: raise {env_var('max_tokens')})"
                                    if finish == "length" else "")
                log.warning("llm reply violates schema purpose=%s repair=%d: %s", purpose, repair, problem[:300])
                convo = [
                    *convo,
                    {"role": "assistant", "content": content or ""},
                    {"role": "user", "content": repair_request(schema, problem)},
                ]
                continue
            self._cache.put(CacheEntry(key=key, purpose=purpose, model=self.config.model, content=content or "",
                                       prompt_tokens=spent.prompt_tokens, completion_tokens=spent.completion_tokens))
            return model, spent
        raise LLMError(ReasonCode.LLM_SCHEMA_VIOLATION,
                       f"{purpose}: reply still invalid after {self.config.max_repairs} repair(s): {problem[:500]}",
                       usage=spent)

    def _key_params(self, schema: type[BaseModel]) -> dict[str, object]:
        return {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "structured_mode": self.config.structured_mode,
            "schema_name": schema.__name__,
            "schema": wire_schema(schema),
        }

    def _chat(self, convo: list[Message], schema: type[BaseModel], purpose: str) -> tuple[str | None, Usage, str]:
        """One logical call: retries what can recover, learns the JSON-mode fallback, stops on configuration."""
        attempt = failed = 0
        while True:
            known = self._endpoint.broken()
            if known is not None:  # reported when first seen; fail fast without another request
                raise LLMError(known.reason, f"{purpose}: {known.detail}", usage=Usage(failed_calls=failed))
            mode = self._endpoint.mode()
            try:
                resp = self._sdk.chat.completions.create(**self._request(convo, schema, mode),
                                                         extra_headers=self._headers)
            except Exception as e:
                if not is_client_error(e):
                    raise
                failed += 1
                failure = classify(e, self.config)
                detail = self._safe(failure.detail)
                if failure.action == "fallback" and mode == "json_schema" and self.config.structured_mode == "auto":
                    self._endpoint.learn("json_object", detail)
                    continue
                if failure.action == "retry" and attempt < self.config.max_retries:
                    self._wait(e, attempt, purpose)
                    attempt += 1
                    continue
                raise self._give_up(failure, detail, purpose, attempt, Usage(failed_calls=failed)) from e
            content, usage, finish = self._content_and_usage(resp)
            return content, usage + Usage(failed_calls=failed), finish

    def _wait(self, exc: BaseException, attempt: int, purpose: str) -> None:
        delay = backoff_delay(attempt, base=self.config.backoff_base, cap=self.config.backoff_cap,
                              retry_after=retry_after_seconds(exc_headers(exc)), rng=self._rng)
        log.warning("llm transient failure purpose=%s attempt=%d err=%s retry_in=%.2fs",
                    purpose, attempt + 1, type(exc).__name__, delay)
        self._sleep(delay)

    def _give_up(self, failure: Failure, detail: str, purpose: str, attempt: int, usage: Usage) -> LLMError:
        if failure.action == "retry":
            return LLMError(failure.reason, f"{purpose}: giving up after {attempt + 1} attempt(s): {detail}", usage)
        if failure.endpoint_wide:
            stored = Failure("stop", failure.reason, detail, endpoint_wide=True)
            if self._endpoint.mark_broken(stored):
                log.error("llm endpoint misconfigured (reported once; later calls fail without a request): %s",
                          detail)
        return LLMError(failure.reason, f"{purpose}: {detail}", usage)

    def _request(self, convo: list[Message], schema: type[BaseModel], mode: WireMode) -> dict[str, Any]:
        instruction = {"role": "system", "content": schema_instruction(schema)}
        req: dict[str, Any] = {
            "model": self.config.model,
            "messages": [instruction, *convo],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if mode == "json_schema":
            req["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": wire_schema(schema), "strict": False},
            }
        else:
            req["response_format"] = {"type": "json_object"}
        return req

    def _content_and_usage(self, resp: object) -> tuple[str | None, Usage, str]:
        choices = getattr(resp, "choices", None) or []
        content = choices[0].message.content if choices else None
        finish = str(getattr(choices[0], "finish_reason", "") or "") if choices else ""
        u = getattr(resp, "usage", None)
        pt = int(getattr(u, "prompt_tokens", 0) or 0)
        ct = int(getattr(u, "completion_tokens", 0) or 0)
        return content, Usage(calls=1, prompt_tokens=pt, completion_tokens=ct,
                              cost_usd=self.config.cost(pt, ct)), finish

    def _safe(self, text: str) -> str:
        """Text for messages and logs, truncated and with the key redacted (servers may echo it)."""
        secret = self.config.api_key.get_secret_value()
        text = text[:600]
        return text.replace(secret, "***") if secret else text
