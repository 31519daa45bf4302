"""Exact and near-duplicate detection across all crawled skills.

Exact: SHA-256 of the normalised body. Near: word 5-gram Jaccard ≥ threshold, found with datasketch MinHash LSH and
then confirmed by the exact Jaccard of the two shingle sets, so LSH only proposes pairs and never decides one. The LSH
runs at a lower threshold than the confirmation and weighs false negatives heavily, because a missed pair is silent
while a false candidate costs one set intersection.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

_WORD = re.compile(r"[a-z0-9]+")
_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class DedupItem:
    skill_id: str
    text: str
    preference: tuple  # smaller sorts first = better canonical candidate


@dataclass(frozen=True)
class DuplicateOf:
    canonical: str
    kind: str  # "exact" | "near"
    jaccard: float


def normalise_for_hash(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def body_hash(text: str) -> str:
    return hashlib.sha256(normalise_for_hash(text).encode()).hexdigest()


class Shingler:
    """Word k-gram shingles as sorted unique uint32 hashes; stable across processes (crc32 + fixed mixing)."""

    def __init__(self, k: int = 5) -> None:
        self.k = k
        self._token_hash: dict[str, int] = {}

    def _ids(self, tokens: list[str]) -> np.ndarray:
        cache = self._token_hash
        out = []
        for t in tokens:
            h = cache.get(t)
            if h is None:
                h = cache[t] = zlib.crc32(t.encode())
            out.append(h)
        return np.asarray(out, dtype=np.uint64)

    def shingles(self, text: str) -> np.ndarray:
        tokens = _WORD.findall(text.lower())
        if not tokens:
            return np.zeros(0, dtype=np.uint32)
        ids = self._ids(tokens)
        k = min(self.k, len(ids))
        n = len(ids) - k + 1
        with np.errstate(over="ignore"):
            acc = np.zeros(n, dtype=np.uint64)
            for j in range(k):
                acc = acc * _MIX + ids[j : j + n] + np.uint64(j + 1)
            acc ^= acc >> np.uint64(29)
            acc *= _MIX
        return np.unique((acc >> np.uint64(32)).astype(np.uint32))


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def minhash_of(shingles: np.ndarray, template: MinHash) -> LeanMinHash:
    m = MinHash(num_perm=len(template.hashvalues), permutations=template.permutations, hashfunc=int,
                scheme=template.scheme)
    m.update_batch(shingles.tolist())
    return LeanMinHash(m)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def candidate_pairs(sigs: dict[str, LeanMinHash], threshold: float, num_perm: int) -> Iterable[tuple[str, str]]:
    lsh = MinHashLSH(threshold=max(0.05, threshold - 0.15), num_perm=num_perm, weights=(0.15, 0.85))
    for key, sig in sigs.items():
        for other in lsh.query(sig):
            yield (other, key)
        lsh.insert(key, sig)


def find_duplicates(items: list[DedupItem], *, threshold: float = 0.8, k: int = 5,
                    num_perm: int = 128) -> dict[str, DuplicateOf]:
    """Map every non-canonical skill id to its cluster's canonical; canonical = min `preference` in the cluster."""
    shingler, template = Shingler(k), MinHash(num_perm=num_perm, seed=1)
    hashes = {it.skill_id: body_hash(it.text) for it in items}
    sets = {it.skill_id: shingler.shingles(it.text) for it in items}
    uf, jac = _UnionFind(), {}
    by_hash: dict[str, str] = {}
    for it in items:
        first = by_hash.setdefault(hashes[it.skill_id], it.skill_id)
        if first != it.skill_id:
            uf.union(first, it.skill_id)
    sigs = {sid: minhash_of(s, template) for sid, s in sets.items() if len(s)}
    for a, b in candidate_pairs(sigs, threshold, num_perm):
        if uf.find(a) == uf.find(b) and hashes[a] == hashes[b]:
            continue
        j = exact_jaccard(sets[a], sets[b])
        if j >= threshold:
            uf.union(a, b)
            jac[(a, b)] = jac[(b, a)] = j
    return _assign_canonicals(items, uf, hashes, sets, jac)


def _assign_canonicals(items, uf, hashes, sets, jac) -> dict[str, DuplicateOf]:
    clusters: dict[str, list[DedupItem]] = {}
    for it in items:
        clusters.setdefault(uf.find(it.skill_id), []).append(it)
    out: dict[str, DuplicateOf] = {}
    for members in clusters.values():
        if len(members) < 2:
            continue
        canon = min(members, key=lambda m: (m.preference, m.skill_id))
        for m in members:
            if m is canon:
                continue
            if hashes[m.skill_id] == hashes[canon.skill_id]:
                out[m.skill_id] = DuplicateOf(canon.skill_id, "exact", 1.0)
            else:
                j = jac.get((m.skill_id, canon.skill_id)) or exact_jaccard(sets[m.skill_id], sets[canon.skill_id])
                out[m.skill_id] = DuplicateOf(canon.skill_id, "near", round(j, 4))
    return out
