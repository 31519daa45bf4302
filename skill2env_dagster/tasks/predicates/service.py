"""A documented local HTTP API as a predicate: the contract a stand-in service can keep offline.

Only a skill that documents its service as local (a localhost / 127.0.0.1 base URL) and shows a create call
(`POST /path` followed by a JSON request body) yields one; that is the same condition under which screening keeps
a "needs a live service" skill (`standin_possible`). The contract (collection, fields, integer fields, port) is
the skill's own; its retry rules (retry a 5xx, never retry a 4xx) are read from its text when it states them.
A skill whose API is documented only by an OpenAPI/Swagger file it ships gets its contract from that file
(openapi.py) when its prose has none.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skill2env_dagster.knowledge.source import Doc
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef
from skill2env_dagster.tasks.predicates.openapi import create_endpoint

_BASE = re.compile(r"https?://(?:localhost|127\.0\.0\.1):(\d{2,5})(/[A-Za-z0-9_./-]*)?")
_POST = re.compile(r"\bPOST\s+(/[A-Za-z0-9_./-]+)(?=[\s`'\"]|$)")
_FIELD = re.compile(r"[a-z][a-z0-9_]{0,30}")
_RETRY_5XX = re.compile(r"\bretry\b.*\b5(?:\d\d|xx)\b|\b5(?:\d\d|xx)\b.*\bretr", re.I)
_NO_RETRY_4XX = re.compile(r"\b(?:never|don'?t|do not)\s+retry\b[^.]*\b4(?:\d\d|xx)\b", re.I)
BODY_WINDOW = 12  # lines after the POST line searched for its JSON request body


def _body(lines: list[str], start: int) -> dict[str, Any] | None:
    """The first JSON object after the POST line with at least one integer and one text field."""
    for raw in lines[start:start + BODY_WINDOW]:
        text = raw.strip()
        if not text.startswith("{"):
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if isinstance(obj, dict):
            fields = {k: v for k, v in obj.items() if _FIELD.fullmatch(k) and k != "id"
                      and isinstance(v, (int, str)) and not isinstance(v, bool)}
            ints = [k for k, v in fields.items() if isinstance(v, int)]
            if ints and len(fields) > len(ints):
                return fields
    return None


_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s")


def _rule_line(docs: list[Doc], pattern: re.Pattern[str]) -> tuple[str, int, str] | None:
    """(file, line, text) of the list item or paragraph that states the rule: a continuation line is traced back
    to its item's first line, so the quote starts where the skill's sentence does."""
    for d in docs:
        for n, line in enumerate(d.lines, 1):
            if pattern.search(line):
                first = n
                while first > 1 and not _ITEM.match(d.lines[first - 1]) and d.lines[first - 2].strip() \
                        and n - first < 4:
                    first -= 1
                return d.path, first, " ".join(x.strip() for x in d.lines[first - 1:n])
    return None


def _line(docs: list[Doc], path: str, n: int) -> str:
    return next(d.lines[n - 1] for d in docs if d.path == path)


def _predicate(docs: list[Doc], collection: str, port: int, body: dict[str, Any],
               where: tuple[str, int, str], extra: dict[str, Any]) -> Predicate:
    """The service predicate; its source is the skill's 5xx retry rule when it states one, else `where` (the
    create call's line)."""
    retry = _rule_line(docs, _RETRY_5XX)
    src = retry or where
    params: dict[str, Any] = {
        "collection": collection, "port": port, "example": body,
        "integers": [k for k, v in body.items() if isinstance(v, int)],
        "retry_5xx": retry is not None, "no_retry_4xx": _rule_line(docs, _NO_RETRY_4XX) is not None, **extra,
    }
    quote = _line(docs, src[0], src[1]).strip()[:200]
    return Predicate(id="R0", kind="service", subject=collection.rsplit("/", 1)[-1][:80],
                     statement=" ".join(src[2].split())[:400], params=params,
                     source=SourceRef(file=src[0], line=src[1], quote=quote))


def _prose_predicate(docs: list[Doc]) -> Predicate | None:
    base = next((m for d in docs for ln in d.lines for m in [_BASE.search(ln)] if m), None)
    if base is None:
        return None
    prefix = (base.group(2) or "").rstrip("/")
    for d in docs:
        for n, line in enumerate(d.lines, 1):
            post = _POST.search(line)
            body = _body(d.lines, n) if post else None
            if post is None or body is None:
                continue
            path = post.group(1).rstrip("/")
            collection = path if not prefix or path.startswith(prefix + "/") else prefix + path
            return _predicate(docs, collection, int(base.group(1)), body, (d.path, n, line), {})
    return None


def _spec_predicate(docs: list[Doc]) -> Predicate | None:
    for d in docs:
        if found := create_endpoint(d):
            body, port, collection, n = found
            where = (d.path, n, f"POST {collection} creates a record from the fields {', '.join(body)}")
            return _predicate(docs, collection, port, body, where, {"spec": d.path})
    return None


def service_predicate(docs: list[Doc]) -> Predicate | None:
    """The skill's local API contract (its prose first, else an OpenAPI document it ships), or None when it
    documents none a stub can keep."""
    return _prose_predicate(docs) or _spec_predicate(docs)
