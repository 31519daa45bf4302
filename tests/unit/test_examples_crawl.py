"""The bundled example hub crawls to exactly the statuses, reasons and duplicates recorded in EXPECTED.yaml."""

import pytest
import yaml

from skill2env_dagster.skillhub.crawl import crawl_paths

RECORDED_ONLY = {"licence_unknown"}  # recorded for every skill without a licence; not part of the verdict


@pytest.fixture(scope="module")
def crawled(examples_dir):
    result = crawl_paths([examples_dir])
    return {r.rel_path: r for r in result.records}


@pytest.fixture(scope="module")
def expected(examples_dir):
    return yaml.safe_load((examples_dir / "EXPECTED.yaml").read_text())["skills"]


def test_every_example_has_an_expectation(crawled, expected):
    top_level = {k for k in crawled if "/" not in k}
    assert top_level == set(expected)
    assert len(top_level) >= 12


def test_status_reasons_and_duplicates_match(crawled, expected):
    mismatches = []
    for folder, exp in expected.items():
        rec = crawled[folder]
        got = {c.value for c in rec.reasons} - RECORDED_ONLY
        want = set(exp.get("reasons", [])) - RECORDED_ONLY
        if rec.status.value != exp["status"] or got != want:
            mismatches.append((folder, rec.status.value, sorted(got), exp["status"], sorted(want)))
        if "duplicate_of" in exp:
            assert rec.duplicate_of and rec.duplicate_of.endswith("__" + exp["duplicate_of"]), folder
        for w in exp.get("warnings", []):
            assert w in rec.warnings, (folder, w, rec.warnings)
    assert mismatches == []


def test_fixture_inside_skill_is_recorded_not_crawled(crawled):
    fx = [r for r in crawled.values() if r.fixture_of]
    assert fx and all(r.status.value == "screened_out" and r.fixture_of.endswith("skill-linter") for r in fx)
