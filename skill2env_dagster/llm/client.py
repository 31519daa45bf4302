"""Structured JSON completions from any OpenAI-compatible server (vLLM, NIM, OpenAI).

`LLMClient.complete_json(messages, Schema, purpose=...)` returns a validated pydantic model and its Usage. It asks
for a JSON-schema response format, falls back to JSON mode (schema in the prompt) when the server rejects that,
validates every reply, asks once (bounded) for a repair on a schema violation, retries transient failures with
backoff honouring Retry-After, and caches validated replies on disk so an unchanged prompt costs nothing.
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections.abc import Callable
from typing import TypeVar

import openai
from pydantic import BaseModel, ValidationError

from skill2env_dagster.llm.cache import CacheEntry, ResponseCache, cache_key
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.pricing import call_cost, sum_usage
from skill2env_dagster.llm.retry import backoff_delay, exc_headers, is_transient, reason_for, retry_after_seconds
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import LLMError, ReasonCode

M = TypeVar("M", bound=BaseModel)
Message = dict[str, str]
log = logging.getLogger(__name__)

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


class SchemaViolation(ValueError):
    """The reply was not JSON, or not JSON matching the schema; the text says what was wrong."""


def parse_reply(content: str | None, schema: type[M]) -> M:
    """Parse a reply into the schema, tolerating a Markdown code fence around the JSON."""
    if not content or not content.strip():
        raise SchemaViolation("empty reply")
    fenced = _FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SchemaViolation(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    try:
        return schema.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in e.errors()[:12])
        raise SchemaViolation(f"does not match schema {schema.__name__}: {problems}") from e


def schema_instruction(schema: type[BaseModel]) -> str:
    return (
        f"Reply with one JSON object only (no prose, no code fence) that validates against this JSON schema "
        f"named {schema.__name__}:\n{json.dumps(schema.model_json_schema(), sort_keys=True)}"
    )


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
            raise LLMError(ReasonCode.LLM_UNAVAILABLE, "no base_url/model configured; use the offline generator")
        self.config = config
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._cache = ResponseCache(config.cache_dir or None)
        self._json_schema_ok = config.structured_mode != "json_object"
        self._sdk = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key.get_secret_value() or "unused",
            timeout=config.timeout,
            max_retries=0,
        )

    def complete_json(self, messages: list[Message], schema: type[M], *, purpose: str) -> tuple[M, Usage]:
        """Validated reply and usage; raises LLMError (llm_unavailable / llm_rate_limited / llm_schema_violation)."""
        key = cache_key(self.config.base_url, self.config.model, messages, self._key_params(schema))
        hit = self._cache.get(key)
        if hit is not None:
            try:
                model = parse_reply(hit.content, schema)
                log.info("llm cache hit purpose=%s model=%s", purpose, self.config.model)
                return model, Usage(cache_hits=1)
            except SchemaViolation:
                log.warning("llm cache entry no longer validates purpose=%s; calling the model", purpose)
        return self._complete_uncached(key, list(messages), schema, purpose)

    def _complete_uncached(self, key: str, convo: list[Message], schema: type[M], purpose: str) -> tuple[M, Usage]:
        usages: list[Usage] = []
        problem = ""
        for repair in range(self.config.max_repairs + 1):
            content, usage = self._chat(convo, schema, purpose)
            usages.append(usage)
            try:
                model = parse_reply(content, schema)
            except SchemaViolation as e:
                problem = str(e)
                log.warning("llm reply violates schema purpose=%s repair=%d: %s", purpose, repair, problem[:300])
                convo = convo + [
                    {"role": "assistant", "content": content or ""},
                    {"role": "user", "content": _repair_request(schema, problem)},
                ]
                continue
            total = sum_usage(usages)
            self._cache.put(
                CacheEntry(
                    key=key,
                    purpose=purpose,
                    model=self.config.model,
                    content=content or "",
                    prompt_tokens=total.prompt_tokens,
                    completion_tokens=total.completion_tokens,
                )
            )
            return model, total
        err = LLMError(
            ReasonCode.LLM_SCHEMA_VIOLATION,
            f"{purpose}: reply still invalid after {self.config.max_repairs} repair(s): {problem[:500]}",
        )
        err.usage = sum_usage(usages)  # type: ignore[attr-defined]
        raise err

    def _key_params(self, schema: type[BaseModel]) -> dict[str, object]:
        return {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "structured_mode": self.config.structured_mode,
            "schema_name": schema.__name__,
            "schema": schema.model_json_schema(),
        }

    def _chat(self, convo: list[Message], schema: type[BaseModel], purpose: str) -> tuple[str | None, Usage]:
        """One logical call: retries transient failures, falls back to JSON mode once if json_schema is refused."""
        attempt = 0
        while True:
            use_schema = self._json_schema_ok
            try:
                resp = self._sdk.chat.completions.create(**self._request(convo, schema, use_schema))
            except openai.BadRequestError as e:
                if use_schema and self.config.structured_mode == "auto":
                    log.warning("server refused json_schema response_format; falling back to JSON mode")
                    self._json_schema_ok = False
                    continue
                raise LLMError(ReasonCode.LLM_UNAVAILABLE, f"{purpose}: request rejected: {self._safe(e)}") from e
            except openai.OpenAIError as e:
                if not is_transient(e):
                    raise LLMError(ReasonCode.LLM_UNAVAILABLE, f"{purpose}: {self._safe(e)}") from e
                if attempt >= self.config.max_retries:
                    raise LLMError(
                        reason_for(e), f"{purpose}: giving up after {attempt + 1} attempt(s): {self._safe(e)}"
                    ) from e
                delay = backoff_delay(
                    attempt,
                    base=self.config.backoff_base,
                    cap=self.config.backoff_cap,
                    retry_after=retry_after_seconds(exc_headers(e)),
                    rng=self._rng,
                )
                log.warning("llm transient failure purpose=%s attempt=%d err=%s retry_in=%.2fs",
                            purpose, attempt + 1, type(e).__name__, delay)
                self._sleep(delay)
                attempt += 1
                continue
            return self._content_and_usage(resp)

    def _request(self, convo: list[Message], schema: type[BaseModel], use_schema: bool) -> dict[str, object]:
        instruction = {"role": "system", "content": schema_instruction(schema)}
        req: dict[str, object] = {
            "model": self.config.model,
            "messages": [instruction, *convo],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if use_schema:
            req["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
            }
        else:
            req["response_format"] = {"type": "json_object"}
        return req

    def _content_and_usage(self, resp: object) -> tuple[str | None, Usage]:
        choices = getattr(resp, "choices", None) or []
        content = choices[0].message.content if choices else None
        u = getattr(resp, "usage", None)
        pt = int(getattr(u, "prompt_tokens", 0) or 0)
        ct = int(getattr(u, "completion_tokens", 0) or 0)
        cost = call_cost(self.config.prices, self.config.model, pt, ct)
        return content, Usage(calls=1, prompt_tokens=pt, completion_tokens=ct, cost_usd=cost)

    def _safe(self, exc: BaseException) -> str:
        """Exception text for messages and logs, truncated and with the key redacted (servers may echo it)."""
        text = f"{type(exc).__name__}: {exc}"[:400]
        secret = self.config.api_key.get_secret_value()
        return text.replace(secret, "***") if secret else text


def _repair_request(schema: type[BaseModel], problem: str) -> str:
    return (
        f"Your previous reply was rejected: {problem[:1500]}\n"
        f"Reply again with only one JSON object that validates against the schema {schema.__name__}."
    )
