"""A service contract from an OpenAPI / Swagger document the skill ships (tasks/predicates/openapi.py), on a skill
fixture of our own (tests/fixtures/skills/parcel-intake) and small in-test specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from skill2env_dagster.knowledge.source import Doc, read_docs
from skill2env_dagster.tasks.predicates.openapi import DEFAULT_PORT, create_endpoint
from skill2env_dagster.tasks.predicates.service import service_predicate
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

PARCELS = Path(__file__).resolve().parents[1] / "fixtures" / "skills" / "parcel-intake"

SWAGGER = {
    "swagger": "2.0", "host": "localhost:9000", "basePath": "/v2",
    "paths": {
        "/things/{id}": {"post": {"parameters": [{"in": "body", "name": "b", "schema": {"$ref": "#/definitions/T"}}]}},
        "/things": {"post": {"parameters": [{"in": "body", "name": "b", "schema": {"$ref": "#/definitions/T"}}]}},
    },
    "definitions": {"T": {"allOf": [
        {"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}},
        {"type": "object", "properties": {"count": {"type": "integer", "minimum": 3}}}]}},
}


def _doc(spec: dict, name: str = "api/swagger.yaml") -> Doc:
    return Doc(name, yaml.safe_dump(spec, sort_keys=False).splitlines())


def test_fixture_skill_gets_its_contract_from_the_spec():
    docs = read_docs(skill_from_dir(PARCELS), specs=True)
    assert [d.path for d in docs] == ["SKILL.md", "references/intake-openapi.json"]
    assert [d.path for d in read_docs(skill_from_dir(PARCELS))] == ["SKILL.md"]  # prose readers skip specs
    p = service_predicate(docs)
    assert p is not None and p.kind == "service"
    assert p.params["collection"] == "/intake/parcels" and p.params["port"] == 8631
    assert p.params["example"] == {"tracking": "PCL-2291", "bay": "B7", "grams": 850}  # no boolean, no readOnly id
    assert p.params["integers"] == ["grams"] and p.params["spec"] == "references/intake-openapi.json"
    assert p.params["retry_5xx"] and p.params["no_retry_4xx"]  # the skill's own rules
    assert p.source.file == "SKILL.md" and "503" in p.statement


def test_swagger_body_parameter_refs_and_allof():
    body, port, collection, line = create_endpoint(_doc(SWAGGER)) or ({}, 0, "", 0)
    assert (port, collection) == (9000, "/v2/things")  # the `{id}` path is not a collection
    assert body == {"label": "LAB-101", "count": 4}  # shaped by type and minimum
    assert "post" in _doc(SWAGGER).lines[line - 1]


def test_remote_server_keeps_its_path_on_a_local_port():
    spec = {"openapi": "3.1.0", "servers": [{"url": "https://api.example.org/v1"}], "paths": {"/notes": {"post": {
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
            "title": {"type": "string"}, "stars": {"type": "integer"}}, "example": {"title": "Hi", "stars": 2}}}}}}}}}
    found = create_endpoint(Doc("openapi.json", json.dumps(spec, indent=1).splitlines()))
    assert found is not None and found[:3] == ({"title": "Hi", "stars": 2}, DEFAULT_PORT, "/v1/notes")


@pytest.mark.parametrize("change", [
    lambda s: s["definitions"]["T"]["allOf"][0]["properties"].update(tags={"type": "array"})
    or s["definitions"]["T"]["allOf"][0]["required"].append("tags"),  # a required field the stub cannot keep
    lambda s: s["definitions"]["T"]["allOf"].pop(),  # no integer field to validate
    lambda s: s.update(swagger=None) or s.pop("swagger"),  # not a spec at all
])
def test_unusable_specs_give_no_endpoint(change):
    spec = json.loads(json.dumps(SWAGGER))
    change(spec)
    assert create_endpoint(_doc(spec)) is None


def test_prose_contract_wins_over_the_spec(examples_dir):
    docs = read_docs(skill_from_dir(examples_dir / "inventory-api-client"), specs=True)
    assert "references/openapi.yaml" in [d.path for d in docs]
    p = service_predicate(docs)
    assert p is not None and "spec" not in p.params and p.params["collection"] == "/api/v1/reservations"


def test_spec_skill_is_planned_a_service_task():
    plans, axes = plans_and_axes(skill_from_dir(PARCELS), ["service_sync"])
    assert any(w.focus is not None and w.focus.family == "service" for w in plans.workflows)
    assert axes.samples and axes.samples[0].archetype == "service_runtime"


def test_a_server_url_that_does_not_parse_falls_back_to_the_default_port():
    """A skill's spec is hostile input: `http://[not-an-address]/` makes urlsplit raise."""
    spec = {"openapi": "3.1.0", "servers": [{"url": "http://[not-an-address]/v1"}], "paths": {"/notes": {"post": {
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
            "title": {"type": "string"}, "stars": {"type": "integer"}}, "example": {"title": "Hi", "stars": 2}}}}}}}}}
    found = create_endpoint(Doc("openapi.json", json.dumps(spec, indent=1).splitlines()))
    assert found is not None and found[1:3] == (DEFAULT_PORT, "/notes")
