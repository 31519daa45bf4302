"""A responder that behaves like a server with constrained decoding: every reply is a random instance of the JSON
schema the request carries (in `response_format`, or in the system prompt in JSON mode), drawn by
hypothesis-jsonschema. Valid for the schema, meaningless as content: what the pipeline must survive.

Draws are seeded: a responder made with the same seed serves the same replies to the same requests, whatever ran
before it in the process. (`strategy.example()` drew batches of ten from a random seed and handed them out to
whichever test asked next, so a test's replies depended on the order of the tests on its xdist worker and on
chance - a failure seen in one run could not be replayed - and each batch of PlanReply cost about 12 s.)"""

from __future__ import annotations

import json
import random
import threading
from typing import Any

from hypothesis.control import BuildContext
from hypothesis.errors import StopTest
from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.strategies import SearchStrategy
from hypothesis_jsonschema import from_schema

_MARK = "validates against this JSON schema named "
_STRATEGIES: dict[str, SearchStrategy[Any]] = {}  # built once per process (building is cheap; drawing is not shared)
_LOCK = threading.Lock()  # hypothesis is not thread-safe; the fake server answers on several threads
_ATTEMPTS = 50  # a draw a filter rejects (or that runs too long) is drawn again from the next seed


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


def _draw(schema: dict[str, Any], rng: random.Random) -> Any:
    """One instance of the schema from hypothesis's own generator, seeded from `rng` (held under _LOCK)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = from_schema(schema)
    strategy = _STRATEGIES[key]
    for _ in range(_ATTEMPTS):
        data = ConjectureData(random=random.Random(rng.getrandbits(64)))
        try:
            with BuildContext(data, wrapped_test=None):
                return data.draw(strategy)
        except StopTest:
            continue
    raise RuntimeError(f"no instance of {schema.get('title', 'the schema')} in {_ATTEMPTS} seeded draws")


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
                args = _draw(tool["parameters"], self.rng)
            self.drawn[tool["name"]] = self.drawn.get(tool["name"], 0) + 1
            return {"content": "", "tool_calls": [{"id": f"call_{sum(self.drawn.values())}", "type": "function",
                                                   "function": {"name": tool["name"],
                                                                "arguments": json.dumps(args)}}]}
        schema = request_schema(body)
        title = str(schema.get("title", "?"))
        with _LOCK:
            instance = _draw(schema, self.rng)
            self.drawn[title] = self.drawn.get(title, 0) + 1
        return json.dumps(instance)
