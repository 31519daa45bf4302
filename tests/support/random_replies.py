"""A responder that behaves like a server with constrained decoding: every reply is a random instance of the JSON
schema the request carries (in `response_format`, or in the system prompt in JSON mode), drawn by
hypothesis-jsonschema. Valid for the schema, meaningless as content: what the pipeline must survive."""

from __future__ import annotations

import json
import random
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


def schema_name(body: dict[str, Any]) -> str:
    """The reply model a JSON request asks for: the json_schema format's name, or (JSON mode) the schema's title."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return str((fmt.get("json_schema") or {}).get("name", ""))
    return str(request_schema(body).get("title", ""))


# Tools a constrained decoder may call but a test should not: a random shell command can legitimately run until its
# timeout (`yes`), and keep_file only copies what such a command made.
SLOW_TOOLS = ("run", "keep_file")


def _draw(schema: dict[str, Any]) -> Any:
    key = json.dumps(schema, sort_keys=True)
    with _LOCK:
        if key not in _STRATEGIES:
            _STRATEGIES[key] = from_schema(schema)
        strategy = _STRATEGIES[key]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonInteractiveExampleWarning)
            return strategy.example()


class RandomReplies:
    """`FakeOpenAI(RandomReplies())`: random schema-valid replies; `drawn` counts them by schema title. A request
    with tools (an agent) gets one call of a random tool (but SLOW_TOOLS) with random schema-valid arguments."""

    def __init__(self, seed: int = 0) -> None:
        self.drawn: dict[str, int] = {}
        self.rng = random.Random(seed)

    def __call__(self, body: dict[str, Any]) -> str | dict[str, Any]:
        if body.get("tools"):
            tools = [t["function"] for t in body["tools"] if t["function"]["name"] not in SLOW_TOOLS]
            with _LOCK:
                tool = self.rng.choice(tools)
            args = _draw(tool["parameters"])
            self.drawn[tool["name"]] = self.drawn.get(tool["name"], 0) + 1
            return {"content": "", "tool_calls": [{"id": f"call_{sum(self.drawn.values())}", "type": "function",
                                                   "function": {"name": tool["name"],
                                                                "arguments": json.dumps(args)}}]}
        schema = request_schema(body)
        instance = _draw(schema)
        title = str(schema.get("title", "?"))
        with _LOCK:
            self.drawn[title] = self.drawn.get(title, 0) + 1
        return json.dumps(instance)
