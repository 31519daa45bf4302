"""The contract with the server: the JSON schema a reply must match, how it is sent, and how a reply is judged.

`wire_schema(Model)` is exactly what goes into `response_format` (or into the prompt in JSON mode) and into the
cache key. Reply models put every rule they check into their JSON schema; rules JSON Schema cannot express are
listed in `SEMANTIC_RULES` and sent along with the schema and with each repair request, so a model is never
rejected for a rule nobody told it.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


class ReplyModel(BaseModel):
    """Base of the reply models sent to the server. `SEMANTIC_RULES`: rules validation checks that JSON Schema
    cannot express (one sentence each); the schema property test skips instances that break one of them."""

    model_config = ConfigDict(extra="forbid")

    SEMANTIC_RULES: ClassVar[tuple[str, ...]] = ()


class SchemaViolationError(ValueError):
    """The reply was not JSON, or not JSON matching the schema; the text says what was wrong."""


def wire_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the server for this reply model."""
    return schema.model_json_schema()


def semantic_rules(schema: type[BaseModel]) -> tuple[str, ...]:
    return tuple(getattr(schema, "SEMANTIC_RULES", ()))


def _rules_text(schema: type[BaseModel]) -> str:
    rules = semantic_rules(schema)
    return "\nIt must also follow these rules:" + "".join(f"\n- {r}" for r in rules) if rules else ""


def schema_instruction(schema: type[BaseModel]) -> str:
    return (f"Reply with one JSON object only (no prose, no code fence) that validates against this JSON schema "
            f"named {schema.__name__}:\n{json.dumps(wire_schema(schema), sort_keys=True)}{_rules_text(schema)}")


def repair_request(schema: type[BaseModel], problem: str) -> str:
    return (f"Your previous reply was rejected: {problem[:1500]}\n"
            f"Reply again with only one JSON object that validates against the schema {schema.__name__}."
            f"{_rules_text(schema)}")


def parse_reply(content: str | None, schema: type[M]) -> M:
    """Parse a reply into the schema, tolerating a Markdown code fence around the JSON."""
    if not content or not content.strip():
        raise SchemaViolationError("empty reply")
    fenced = _FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SchemaViolationError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    try:
        return schema.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in e.errors()[:12])
        raise SchemaViolationError(f"does not match schema {schema.__name__}: {problems}") from e
