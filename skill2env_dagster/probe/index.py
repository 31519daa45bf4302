"""The candidate-skill index: one tokenisation shared by TF-IDF, BM25 and the entity mask.

Scoring is done with sparse matrix products so that 8k queries against 3.4k skills take seconds: TF-IDF comes from
scikit-learn; BM25 takes its parameters and idf table from rank-bm25's `BM25Okapi` and applies them as a sparse
weight matrix, which gives the same scores as `BM25Okapi.get_scores` (a unit test checks this) without its
per-query Python loop over every document.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from rank_bm25 import BM25Okapi

from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.reasons import InputError, ReasonCode

if TYPE_CHECKING:  # scikit-learn costs seconds at import: loaded when a probe runs, not with the code location
    from sklearn.feature_extraction.text import CountVectorizer


def vectorizer() -> CountVectorizer:
    from sklearn.feature_extraction.text import CountVectorizer

    # Words of two or more characters, lower-cased, English stop words dropped: file types ("csv"), tool names
    # ("ffmpeg") and identifiers survive, the glue words of every instruction do not.
    return CountVectorizer(lowercase=True, stop_words="english", token_pattern=r"(?u)\b\w\w+\b", dtype=np.float64)


class SkillIndex:
    """Fitted once per candidate set; turns query texts into term counts and term counts into score blocks."""

    def __init__(self, skills: Sequence[SkillRecord], *, k1: float = 1.5, b: float = 0.75) -> None:
        if not skills:
            raise InputError(ReasonCode.NOT_ELIGIBLE, "no candidate skills: the probe needs at least one skill")
        self.skill_ids = [s.skill_id for s in skills]
        if len(set(self.skill_ids)) != len(self.skill_ids):
            raise InputError(ReasonCode.INTERNAL_ERROR, "candidate skills contain a repeated skill_id")
        self.position = {sid: i for i, sid in enumerate(self.skill_ids)}
        self.domains = [s.domain for s in skills]
        self._analyze = vectorizer().build_analyzer()
        # Skills are tokenised once; the token lists feed both the vocabulary and rank-bm25.
        tokens = [self._analyze(s.text_for_retrieval()) for s in skills]
        from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

        self.vectorizer = CountVectorizer(analyzer=self._tokens, dtype=np.float64)
        try:
            counts = self.vectorizer.fit_transform(tokens).tocsr()
        except ValueError as e:  # every document empty or stop words only
            raise InputError(ReasonCode.EMPTY_SKILL, f"candidate skills have no indexable words: {e}") from e
        self.doc_counts = counts
        self.tfidf = TfidfTransformer().fit(counts)
        self.idf = self.tfidf.idf_
        self.tfidf_docs_t = self.tfidf.transform(counts).T.tocsr()
        self._tokens_of_docs, self._k1, self._b = tokens, k1, b
        self._bm25_t: sp.csr_matrix | None = None
        self._tfidf_w = (sp.diags(self.idf) @ self.tfidf_docs_t).tocsr()
        self._stacked_t: sp.csr_matrix | None = None
        self._names = [s.name or "" for s in skills]

    @property
    def bm25_docs_t(self) -> sp.csr_matrix:
        """BM25 weights (vocabulary x skills), built on first use: TF-IDF-only runs never pay for them."""
        if self._bm25_t is None:
            self._bm25_t = self._bm25_weights(self._tokens_of_docs, self.doc_counts, self._k1, self._b).T.tocsr()
        return self._bm25_t

    def _tokens(self, doc: str | list[str]) -> list[str]:
        return doc if isinstance(doc, list) else self._analyze(doc)

    @property
    def n_skills(self) -> int:
        return len(self.skill_ids)

    def counts(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Term counts of query texts over the skills' vocabulary (unknown words cannot score, so they are dropped)."""
        return self.vectorizer.transform(texts).tocsr()

    def _bm25_weights(self, tokens: list[list[str]], counts: sp.csr_matrix, k1: float, b: float) -> sp.csr_matrix:
        if not any(tokens):
            raise InputError(ReasonCode.EMPTY_SKILL, "candidate skills have no indexable words")
        bm25 = BM25Okapi(tokens, k1=k1, b=b)
        terms = self.vectorizer.get_feature_names_out()
        idf = np.array([bm25.idf.get(t, 0.0) for t in terms])
        doc_len = np.asarray(bm25.doc_len, dtype=np.float64)
        rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
        tf = counts.data
        norm = k1 * (1 - b + b * doc_len[rows] / bm25.avgdl)
        data = idf[counts.indices] * tf * (k1 + 1) / (tf + norm)
        return sp.csr_matrix((data, counts.indices.copy(), counts.indptr.copy()), shape=counts.shape)

    def bm25_scores(self, query_counts: sp.csr_matrix) -> np.ndarray:
        """Okapi BM25 with each query token counted as often as it occurs, as rank-bm25 does."""
        return np.asarray((query_counts @ self.bm25_docs_t).toarray())

    def scores(self, query_counts: sp.csr_matrix, bm25: bool = True) -> dict[str, np.ndarray]:
        """TF-IDF (and BM25) scores of a block of queries from one sparse product.

        Both scorers are `counts @ X`; stacking their X side by side shares one pass over the query terms. The
        TF-IDF score is the cosine similarity without the query's norm, left out on purpose: it scales a whole row,
        so it never changes a rank, and without it the score is linear in the counts (instruction+rubric is the sum
        of the two parts' scores).
        """
        if not bm25:
            return {"tfidf": np.asarray((query_counts @ self._tfidf_w).toarray())}
        if self._stacked_t is None:
            self._stacked_t = sp.hstack([self._tfidf_w, self.bm25_docs_t]).tocsr()
        both = np.asarray((query_counts @ self._stacked_t).toarray())
        n = self.n_skills
        return {"tfidf": both[:, :n], "bm25": both[:, n:]}

    def distinctive_terms(self, top_k: int) -> sp.csr_matrix:
        """Binary skills x vocabulary mask: each skill's top-k TF-IDF terms plus the words of its name.

        These are the names, tools and file types that let a query find its skill by vocabulary alone.
        """
        docs = self.tfidf_docs_t.T.tocsr()
        rows: list[np.ndarray] = []
        for i in range(docs.shape[0]):
            lo, hi = docs.indptr[i], docs.indptr[i + 1]
            order = np.argsort(-docs.data[lo:hi], kind="stable")[:top_k]
            rows.append(docs.indices[lo:hi][order])
        name_counts = self.counts(self._names)
        ptr = name_counts.indptr
        cols = [np.union1d(r, name_counts.indices[ptr[i] : ptr[i + 1]]) for i, r in enumerate(rows)]
        indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
        indices = np.concatenate(cols) if cols else np.array([], dtype=np.int64)
        return sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=docs.shape)
