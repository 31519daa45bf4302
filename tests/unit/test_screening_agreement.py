"""agreement.py: the stratified sample is deterministic and label-blind, and the agreement figures (counts, percent,
Cohen's kappa) are right on tiny synthetic labellings with known values."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SET = Path(__file__).resolve().parents[2] / "benchmarks" / "screening_set"


@pytest.fixture(scope="module")
def agreement():
    sys.path.insert(0, str(SET))
    try:
        spec = importlib.util.spec_from_file_location("agreement", SET / "agreement.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["agreement"] = mod
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(SET))


def _by_what(rows):
    return {a.what: a for a in rows}


def test_kappa_of_a_known_table(agreement):
    # 2x2 table: both yes 1, first only 1, both no 2 -> p_o = 0.75, p_e = 0.5*0.25 + 0.5*0.75 = 0.5, kappa = 0.5
    assert agreement.kappa([True, True, False, False], [True, False, False, False]) == pytest.approx(0.5)
    assert agreement.kappa([True, False, True], [True, False, True]) == pytest.approx(1.0)
    # one answer from both labellers: kappa is undefined, reported as None rather than nan
    assert agreement.kappa([False, False], [False, False]) is None
    assert agreement.kappa([], []) is None


def test_agreement_counts_per_code_screened_out_and_credentials_or_live(agreement):
    acct, live, hw = "needs_external_account", "needs_live_service", "needs_hardware"
    pairs = [
        (frozenset({acct, live}), frozenset({acct, live})),  # same
        (frozenset({live}), frozenset({acct, live})),  # second adds an account
        (frozenset(), frozenset({live})),  # eligible vs screened out
        (frozenset({hw}), frozenset({hw})),
        (frozenset(), frozenset()),
    ]
    rows = _by_what(agreement.agreement(pairs))
    assert next(iter(rows)) == "screened out" and [*rows][-1] == "credentials or live"
    assert set(agreement.CODES) <= set(rows)

    out = rows["screened out"]  # first [T,T,F,T,F], second [T,T,T,T,F]
    assert (out.n, out.both, out.only_first, out.only_second) == (5, 3, 0, 1)
    assert out.percent == pytest.approx(80.0)
    # p_o = 0.8, p_e = 0.6*0.8 + 0.4*0.2 = 0.56 -> kappa = 0.24 / 0.44
    assert out.kappa == pytest.approx(0.24 / 0.44)

    a = rows[acct]  # first [T,F,F,F,F], second [T,T,F,F,F]
    assert (a.both, a.only_first, a.only_second) == (1, 0, 1)
    assert a.kappa == pytest.approx((0.8 - (0.2 * 0.4 + 0.8 * 0.6)) / (1 - (0.2 * 0.4 + 0.8 * 0.6)))

    cl = rows["credentials or live"]  # first [T,T,F,F,F], second [T,T,T,F,F]
    assert (cl.both, cl.only_first, cl.only_second) == (2, 0, 1)

    assert rows[hw].kappa == pytest.approx(1.0) and rows[hw].percent == pytest.approx(100.0)
    assert rows["malicious"].kappa is None and rows["malicious"].percent == pytest.approx(100.0)
    assert "n/a" in rows["malicious"].line() and "kappa   0.55" in out.line()


def test_sample_is_stratified_deterministic_and_salted(agreement):
    entries = [{"id": f"r/x@c:s{i}", "half": "tune" if i % 3 else "test"} for i in range(60)]
    picked = agreement.sample(entries, 10)
    assert [e["half"] for e in picked].count("tune") == 5 and [e["half"] for e in picked].count("test") == 5
    assert agreement.sample(list(reversed(entries)), 10) == picked  # order of the input does not matter
    assert agreement.sample(entries, 10, salt="other") != picked
    assert [e["half"] for e in agreement.sample(entries, 7)].count("tune") == 4
