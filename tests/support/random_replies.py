"""A responder that behaves like a server with constrained decoding: every reply is a random instance of the JSON
schema the request carries (in `response_format`, or in the system prompt in JSON mode), drawn by
hypothesis-jsonschema. Valid for the schema, meaningless as content: what the pipeline must survive."""

from __future__ import annotations

import json
import threading
import warnings
from typing import Any

from hypothesis.errors import NonInteractiveExampleWarning
from hypothesis.strategies import SearchStrategy
from hypothesis_jsonschema import from_schema

_MARK = "validates against this JSON schema named "
# Shared by every responder in the process: hypothesis draws a batch of examples the first time a strategy is asked
# (about 12 s for PlanReply) and hands them out afterwards.
_STRATEGIES: dict[str, SearchStrategy[Any]] = {}
_LOCK = threading.Lock()  # hypothesis is not thread-safe; the fake server answers on several threads


def request_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The schema a request asks for: the json_schema response format, else the one in the schema instruction."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["schema"]
    for m in body.get("messages", []):
        text = m.get("content") or ""
        if _MARK in text:
            return json.loads(text.split(_MARK, 1)[1].split("\n", 2)[1])
    raise ValueError("request names no JSON schema")


class RandomReplies:
    """`FakeOpenAI(RandomReplies())`: random schema-valid replies; `drawn` counts them by schema title."""

    def __init__(self) -> None:
        self.drawn: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str:
        schema = request_schema(body)
        key = json.dumps(schema, sort_keys=True)
        with _LOCK:
            if key not in _STRATEGIES:
                _STRATEGIES[key] = from_schema(schema)
            strategy = _STRATEGIES[key]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NonInteractiveExampleWarning)
                instance = strategy.example()
            title = str(schema.get("title", "?"))
            self.drawn[title] = self.drawn.get(title, 0) + 1
        return json.dumps(instance)
