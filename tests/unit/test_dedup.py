"""Exact and near-duplicate detection: planted pairs found, distinct texts never paired, canonical rule."""

import random

from skill2env_dagster.skillhub.dedup import DedupItem, Shingler, exact_jaccard, find_duplicates


def _texts(n, seed=1):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    return [" ".join(rng.choices(vocab, k=250)) for _ in range(n)]


def test_planted_duplicates_found_and_distinct_not_paired():
    texts = _texts(300)
    items = [DedupItem(f"s{i:03d}", t, (0,)) for i, t in enumerate(texts)]
    words = texts[10].split()
    words[100] = "changed"
    items.append(DedupItem("near10", " ".join(words), (1,)))
    items.append(DedupItem("exact20", texts[20].upper().replace(" ", "  "), (1,)))
    dupes = find_duplicates(items, threshold=0.8)
    assert set(dupes) == {"near10", "exact20"}
    assert dupes["near10"].canonical == "s010" and dupes["near10"].kind == "near"
    assert dupes["exact20"].canonical == "s020" and dupes["exact20"].kind == "exact"


def test_threshold_is_respected():
    base = _texts(1, seed=5)[0].split()
    half = base[:125] + _texts(1, seed=6)[0].split()[:125]
    items = [DedupItem("a", " ".join(base), (0,)), DedupItem("b", " ".join(half), (0,))]
    sh = Shingler(5)
    j = exact_jaccard(sh.shingles(items[0].text), sh.shingles(items[1].text))
    assert 0.2 < j < 0.6
    assert find_duplicates(items, threshold=0.8) == {}
    assert "b" in find_duplicates(items, threshold=max(0.05, j - 0.05))


def test_canonical_prefers_lower_preference_then_id():
    t = _texts(1)[0]
    items = [DedupItem("z-good", t, (0,)), DedupItem("a-bad", t, (1,)), DedupItem("m-good", t, (0,))]
    dupes = find_duplicates(items)
    assert dupes["a-bad"].canonical == "m-good" and dupes["z-good"].canonical == "m-good"
