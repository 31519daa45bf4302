"""The JSON schema we send is the whole contract: every reply a constrained decoder can produce for it passes our
validation (apart from a reply model's listed SEMANTIC_RULES: only CheatsReply's bash syntax), and the rules we
check are in the schema the server sees, so it cannot produce a reply we would reject."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator, validators
from jsonschema import ValidationError as SchemaError
from pydantic import BaseModel, ValidationError

from skill2env_dagster.llm.schema import (
    parse_reply,
    schema_instruction,
    semantic_rules,
    wire_schema,
)
from skill2env_dagster.planning.llm_planner import PlanReply
from skill2env_dagster.tasks.llm_blueprint import blueprint_reply
from skill2env_dagster.tasks.llm_replies import (
    CheatsReply,
    EnvironmentReply,
    InstructionReply,
    RubricReply,
    SolutionReply,
    VerifierReply,
)

BlueprintReply = blueprint_reply(["SKILL.md:3", "docs/rules.md:12"], ["facts-split-across-sources", "other-one"])
REPLY_MODELS: list[type[BaseModel]] = [PlanReply, BlueprintReply, EnvironmentReply, InstructionReply, VerifierReply,
                                       RubricReply, SolutionReply, CheatsReply]
PROPERTY = settings(max_examples=25, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@pytest.mark.parametrize("model", REPLY_MODELS, ids=lambda m: m.__name__)
def test_every_schema_valid_reply_is_accepted(model: type[BaseModel]) -> None:
    # A rule added to validation must go into the schema or be listed here (and sent with the schema).
    assert semantic_rules(model) == (() if model is not CheatsReply else CheatsReply.SEMANTIC_RULES)

    @PROPERTY
    @given(from_schema(wire_schema(model)))
    def check(instance: object) -> None:
        try:
            model.model_validate(instance)
        except ValidationError as e:
            if model is CheatsReply and "bash syntax" in str(e) and len(e.errors()) == 1:
                return  # the listed semantic rule: random text seldom parses as bash
            pytest.fail(f"{model.__name__}: schema-valid reply rejected: {e}\n{instance!r}"[:3000])

    check()


def _ecma_pattern(validator: Any, pattern: str, instance: object, schema: object) -> Any:
    """`pattern` with ECMA-262 semantics, as servers apply it: `$` is the end of the string (Python's `$` would also
    match before a final newline)."""
    if isinstance(instance, str) and not re.search(re.sub(r"(?<!\\)\$", r"\\Z", pattern), instance):
        yield SchemaError(f"{instance!r} does not match {pattern!r}")


EcmaValidator = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


def schema_errors(model: type[BaseModel], data: object) -> list[SchemaError]:
    return list(EcmaValidator(wire_schema(model)).iter_errors(data))


def _bad_variants() -> list[tuple[type[BaseModel], dict]]:
    wf = {"rank": 1, "name": "fix-report", "summary": "s",
          "criteria": {"verifiable": 5, "well_specified": 4, "solvable_in_hours": 4, "hard_for_good_reason": 4,
                       "realistic": 5, "outcome_graded": 5, "rationale": "r"},
          "meta_plan": {"scenario": "s", "initial_world": "w", "difficulty_source": "x", "solution_sketch": "y",
                        "verifier_strategy": "z"},
          "axis_pool": [{"archetype": "repair_debug", "primary_verifier_pattern": "exact_state", "persona": "a"}]}
    env = {"image": "minimal", "dockerfile_lines": ["COPY app/ /app/"], "files": {"app/x.csv": "a"}}
    tests = {"files": {"test.sh": "#!/bin/bash\n"}, "metrics": ["a_metric", "b_metric"]}
    rubric = {"must_do": ["x"], "must_avoid": ["y"], "best_practice": ["z"]}
    blueprint = {"objective": "Sum the ok readings per sensor into one file.",
                 "rules": [{"kind": "format", "subject": "s", "statement": "t", "source": "SKILL.md:3"}],
                 "challenges": [{"pattern": "other-one", "instantiation": "i"}], "environment_facts": ["f"],
                 "boundary": {"stated": ["a"], "discover": ["b"]},
                 "acceptance": [{"metric": "m_one", "checks": "c"}, {"metric": "m_two", "checks": "c"}],
                 "complexity": {"files_to_read": 1, "dependent_steps": 1, "items": 1},
                 "deliverables": ["/app/out.csv"]}
    BlueprintReply.model_validate(blueprint)  # the base the bad variants break one rule of
    return [
        (PlanReply, {"workflows": [{**wf, "name": ""}]}),
        (PlanReply, {"workflows": [{**wf, "name": "Fix Report"}]}),
        (PlanReply, {"workflows": [{**wf, "axis_pool": [{**wf["axis_pool"][0], "persona": "Data Analyst"}]}]}),
        (PlanReply, {"workflows": []}),
        (EnvironmentReply, {**env, "dockerfile_lines": ["FROM ubuntu"]}),
        (EnvironmentReply, {**env, "dockerfile_lines": ["ADD https://x /app/"]}),
        (EnvironmentReply, {**env, "dockerfile_lines": ["RUN a\nRUN b"]}),
        (EnvironmentReply, {**env, "files": {"Dockerfile": "FROM evil"}}),
        (EnvironmentReply, {**env, "files": {"../escape.txt": "x"}}),
        (EnvironmentReply, {**env, "files": {"/etc/passwd": "x"}}),
        (EnvironmentReply, {**env, "files": {"tests/test.sh": "x"}}),
        (EnvironmentReply, {**env, "files": {"a\\b": "x"}}),
        (EnvironmentReply, {**env, "files": {f"f{i}.txt": "x" for i in range(41)}}),
        (InstructionReply, {"instruction": "too short"}),
        (VerifierReply, {**tests, "files": {"check.py": "x"}}),
        (VerifierReply, {**tests, "metrics": ["Bad Name", "ok"]}),
        (VerifierReply, {**tests, "metrics": ["same", "same"]}),
        (VerifierReply, {**tests, "files": {"test.sh": "#!/bin/bash\n", "solution/solve.sh": "x"}}),
        (VerifierReply, {**tests, "files": {"test.sh": "echo no shebang\n"}}),
        (SolutionReply, {"files": {"wrong.sh": "#!/bin/bash\n"}}),
        (SolutionReply, {"files": {"solve.sh": "#!/bin/bash\n", "../../tests/test.sh": "x"}}),
        (SolutionReply, {"files": {"solve.sh": "#!/bin/bash\n", "wrong.sh": "no shebang"}}),
        (RubricReply, {**rubric, "must_do": []}),
        (RubricReply, {**rubric, "must_avoid": ["two\nlines"]}),
        (RubricReply, {**rubric, "best_practice": ["   "]}),
        (BlueprintReply, {**blueprint, "rules": [{**blueprint["rules"][0], "source": "SKILL.md:4"}]}),
        (BlueprintReply, {**blueprint, "challenges": [{**blueprint["challenges"][0], "pattern": "made-up"}]}),
        (BlueprintReply, {**blueprint, "acceptance": blueprint["acceptance"][:1]}),
        (BlueprintReply, {**blueprint, "deliverables": ["out.csv"]}),
        (CheatsReply, {"cheats": {"only": "#!/bin/bash\n"}}),
        (CheatsReply, {"cheats": {"a.sh": "#!/bin/bash\n", "b": "#!/bin/bash\n"}}),
        (CheatsReply, {"cheats": {"a": "no shebang", "b": "#!/bin/bash\n"}}),
        (CheatsReply, {"cheats": {"a": "#!/bin/bash\n" + "x" * 8000, "b": "#!/bin/bash\n"}}),
    ]


@pytest.mark.parametrize(("model", "bad"), _bad_variants(), ids=lambda v: getattr(v, "__name__", ""))
def test_each_rule_we_check_is_in_the_schema_sent(model: type[BaseModel], bad: dict) -> None:
    """Rejected by our validation and by the schema the server is given: the server was told."""
    with pytest.raises(ValidationError):
        model.model_validate(bad)
    assert schema_errors(model, bad), f"schema accepts {bad}"


@pytest.mark.parametrize("model", REPLY_MODELS, ids=lambda m: m.__name__)
def test_schema_is_well_formed_and_sent_in_the_instruction(model: type[BaseModel]) -> None:
    Draft202012Validator.check_schema(wire_schema(model))
    assert model.__name__ in schema_instruction(model)


@settings(max_examples=60, deadline=None, database=None)
@given(st.one_of(st.text(max_size=30), st.from_regex(r"[a-z./_\\-]{0,12}\n?", fullmatch=True)))
def test_file_paths_follow_one_rule_on_both_sides(path: str) -> None:
    """Our path check and the schema's propertyNames agree on arbitrary keys (no rule lives on one side only)."""
    data = {"files": {"solve.sh": "#!/bin/bash\n", path: "y"}}
    try:
        parse_reply(json.dumps(data), SolutionReply)
        ours = True
    except ValueError:
        ours = False
    assert ours == (not schema_errors(SolutionReply, data)), path
