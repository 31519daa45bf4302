"""A service contract read from an OpenAPI 3 / Swagger 2 document the skill ships (openapi.yaml, swagger.json…).

Some skills document their API only by such a file: no `POST /path` line with a JSON example in the prose. We
take its first create endpoint the stand-in stub can keep honestly: a POST to a collection path (no `{param}`)
with a JSON object body whose fields are strings and integers, at least one of each, and no required field of any
other type. The example body is the schema's own example where it gives one (per property or whole), else a value
shaped by the type. The base path and port come from `servers[0].url` (Swagger: `host` + `basePath`); a base URL
that is not local keeps its path, and the stand-in answers on 127.0.0.1. Retry rules are read like the prose ones
(service.py, which builds the predicate), from the skill's text or the spec's own response descriptions.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import yaml

from skill2env_dagster.knowledge.source import Doc, is_spec

DEFAULT_PORT = 8080  # the stand-in's port when the spec's server is not local
_FIELD = re.compile(r"[a-z][a-z0-9_]{0,30}")
_LOCAL = {"localhost", "127.0.0.1"}


def _load(doc: Doc) -> dict[str, Any] | None:
    text = "\n".join(doc.lines)
    if not is_spec(doc.path, text):
        return None
    try:
        spec = json.loads(text) if doc.path.lower().endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return None
    return spec if isinstance(spec, dict) and ("openapi" in spec or "swagger" in spec) else None


def _resolve(spec: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """Follow local `$ref`s (and merge `allOf` objects); anything unresolvable is None."""
    if depth > 8 or not isinstance(node, dict):
        return node if depth <= 8 else None
    if isinstance(ref := node.get("$ref"), str):
        target: Any = spec
        for part in ref.removeprefix("#/").split("/") if ref.startswith("#/") else [None]:
            target = target.get(part) if isinstance(target, dict) and part is not None else None
        return _resolve(spec, target, depth + 1)
    if isinstance(node.get("allOf"), list):
        parts = [_resolve(spec, p, depth + 1) or {} for p in node["allOf"]]
        return {"type": "object", "properties": {k: v for p in parts for k, v in (p.get("properties") or {}).items()},
                "required": [r for p in parts for r in p.get("required") or []]}
    return node


def _body_schema(spec: dict[str, Any], op: dict[str, Any]) -> dict[str, Any] | None:
    body = _resolve(spec, op.get("requestBody"))
    if isinstance(body, dict):  # OpenAPI 3
        schema = ((body.get("content") or {}).get("application/json") or {}).get("schema")
    else:  # Swagger 2: a parameter `in: body`
        params = [_resolve(spec, p) for p in op.get("parameters") or []]
        schema = next((p.get("schema") for p in params if isinstance(p, dict) and p.get("in") == "body"), None)
    schema = _resolve(spec, schema)
    return schema if isinstance(schema, dict) and isinstance(schema.get("properties"), dict) else None


def _example(name: str, prop: dict[str, Any], whole: dict[str, Any], i: int) -> int | str:
    kind = prop.get("type")
    given = prop.get("example", whole.get(name))
    if kind == "integer":
        return given if isinstance(given, int) and not isinstance(given, bool) and given >= 1 else \
            max(1, int(prop.get("minimum") or 1)) + 1
    if isinstance(given, str) and given:
        return given
    enum = [e for e in prop.get("enum") or [] if isinstance(e, str) and e]
    return enum[0] if enum else f"{name[:3].upper()}-{101 + i}"


def _fields(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, int | str] | None:
    """The example body, or None when a required field is neither a string nor an integer."""
    props = {k: _resolve(spec, v) or {} for k, v in schema["properties"].items()}
    usable = {k: v for k, v in props.items() if v.get("type") in ("integer", "string") and _FIELD.fullmatch(k)
              and k != "id" and not v.get("readOnly") and v.get("format") != "binary"}
    if set(schema.get("required") or []) - set(usable):
        return None
    given = schema.get("example")
    whole: dict[str, Any] = given if isinstance(given, dict) else {}
    body = {k: _example(k, v, whole, i) for i, (k, v) in enumerate(usable.items())}
    ints = [k for k, v in body.items() if isinstance(v, int)]
    return body if ints and len(body) > len(ints) else None


def _base(spec: dict[str, Any]) -> tuple[int, str]:
    """(port, path prefix) of the documented server."""
    if "swagger" in spec:
        url = f"http://{spec.get('host') or 'localhost'}{spec.get('basePath') or ''}"
    else:
        servers = spec.get("servers") or [{}]
        url = str((servers[0] if isinstance(servers[0], dict) else {}).get("url") or "/")
    try:  # a skill's spec is hostile input: `http://[not-an-ip]/`, a port out of range
        parts = urlsplit(url)
        port = parts.port if parts.hostname in _LOCAL and parts.port else DEFAULT_PORT
    except ValueError:
        return DEFAULT_PORT, ""
    return port or DEFAULT_PORT, parts.path.rstrip("/")


def _line_of(doc: Doc, path: str) -> int:
    """The 1-based line of the `post` key under `path` (else of `path`, else 1)."""
    start = next((n for n, ln in enumerate(doc.lines, 1) if re.search(rf'(^|["\s]){re.escape(path)}"?\s*:', ln)), 0)
    post = next((n for n, ln in enumerate(doc.lines[start:], start + 1) if re.search(r'(^|["\s])post"?\s*:', ln)),
                0) if start else 0
    return post or start or 1


def create_endpoint(doc: Doc) -> tuple[dict[str, Any], int, str, int] | None:
    """(example body, port, collection path, line of its `post`) of the doc's first usable create endpoint."""
    spec = _load(doc)
    if spec is None or not isinstance(spec.get("paths"), dict):
        return None
    port, prefix = _base(spec)
    for path, item in spec["paths"].items():
        op = item.get("post") if isinstance(item, dict) else None
        if not isinstance(path, str) or "{" in path or not isinstance(op, dict):
            continue
        schema = _body_schema(spec, op)
        body = _fields(spec, schema) if schema else None
        if body is not None:
            return body, port, prefix + path.rstrip("/"), _line_of(doc, path)
    return None
