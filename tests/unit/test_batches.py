"""Batches of consecutive partitions: every wanted key exactly once, never an unwanted one, at most `size`."""

import pytest

from skill2env_dagster.skillhub.batches import contiguous_batches


def test_a_first_crawl_is_ceil_n_over_size_runs():
    keys = [f"k{i:03d}" for i in range(250)]
    batches = contiguous_batches(keys, keys, 100)
    assert [len(b.keys) for b in batches] == [100, 100, 50]
    assert (batches[0].first, batches[0].last) == ("k000", "k099")


def test_keys_that_need_nothing_cut_the_stretch_and_are_never_included():
    order = list("abcdefgh")
    batches = contiguous_batches(order, {"a", "b", "d", "e", "f", "h"}, 2)
    assert [b.keys for b in batches] == [("a", "b"), ("d", "e"), ("f",), ("h",)]


def test_nothing_wanted_is_no_batch_and_a_bad_size_is_refused():
    assert contiguous_batches(["a", "b"], set(), 10) == []
    with pytest.raises(ValueError):
        contiguous_batches(["a"], {"a"}, 0)
