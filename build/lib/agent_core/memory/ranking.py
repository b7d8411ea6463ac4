"""Lexical relevance ranking for memories that have no embedding model.

A score is the cosine similarity of two texts' TF-IDF vectors over *normalised terms*, so it
is always in [0, 1]: 1.0 means the same terms in the same proportions, 0.0 no term in common.
Normalising a text into terms:

1. lower-case words and numbers (``[a-z0-9]+``);
2. drop stop words: function words and request phrasing ("show me", "which", "please"),
   which say nothing about *what* is asked;
3. light suffix stemming ("orders", "ordered", "ordering" -> ``order``);
4. map analytics synonyms onto one concept ("most", "highest", "best" -> ``top``;
   "sales", "income" -> ``revenue``; "clients" -> ``customer``...), see ``DEFAULT_SYNONYMS``.

Weights are ``(1 + ln tf) * sqrt(idf)`` with the smoothed ``idf = 1 + ln((N + 1) / (df + 1))``
over the documents being ranked; numbers count half (``top 5`` and ``top 10`` ask the same
thing). IDF is square-root damped so that one rare extra word cannot sink an otherwise
matching paraphrase, while shared rare terms still rank above shared common ones.

What a threshold means on this scale: about 0.7 when the texts share most of their content
words once stemmed and synonym-mapped ("top 5 customers by revenue" vs "which customers
brought in the most revenue" scores ~0.8), about 0.5 when they share half, below 0.3 for
a loose topical overlap ("monthly revenue trend" vs "top customers by revenue"). So the
``AgentMemory`` default of 0.7, chosen for embeddings, keeps its "close paraphrase" meaning.

>>> index = RelevanceIndex()
>>> index.add("a", "which customers brought in the most revenue")
>>> index.add("b", "monthly revenue trend")
>>> [(key, round(score, 2)) for key, score in index.search("top 5 customers by revenue")]
[('a', 0.8), ('b', 0.25)]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing down during each else ever for from
    further get give had has have having he her here hers him his how i if in into is it its
    just let lets list me my myself of off on once only or other our ours out over own per
    please s same she should show so some such t tell than that the their theirs them then
    there these they this those through to too under until up us very want was we were what
    whats when where which while who whom why will with would you your yours display find
    fetch see look""".split()
)

DEFAULT_SYNONYMS: Mapping[str, Iterable[str]] = {
    "top": "top most best highest largest biggest greatest leading max maximum".split(),
    "bottom": "bottom least worst lowest smallest fewest min minimum".split(),
    "revenue": "revenue sales income turnover earnings".split(),
    "customer": "customer client buyer shopper".split(),
    "order": "order purchase transaction".split(),
    "product": "product item sku".split(),
    "count": "count number many".split(),
    "sell": "sell sold selling".split(),
    "average": "average avg mean".split(),
    "trend": "trend evolution timeline history time".split(),
    "chart": "chart plot graph diagram visualize visualise visualization".split(),
    "region": "region country territory location".split(),
    "day": "day daily".split(),
}
"""Concept -> words that mean it in analytics questions; extend with ``Analyzer(synonyms=)``."""

NUMBER_WEIGHT = 0.5
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ies", "ing", "ed", "ly", "s")


def _strip_suffix(word: str) -> str:
    for suffix in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        if suffix == "s" and word.endswith(("ss", "us", "is")):
            return word
        base = word[: -len(suffix)]
        if suffix == "ies":
            return base + "y"
        if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
            return base[:-1]  # shipped -> ship
        return base
    return word


def stem(word: str) -> str:
    """Strip one common English suffix, then a final "e", keeping at least three letters.

    >>> [stem(w) for w in ["orders", "ordered", "categories", "monthly", "revenues"]]
    ['order', 'order', 'category', 'month', 'revenu']
    """
    if len(word) <= 3 or word.isdigit():
        return word
    base = _strip_suffix(word)
    return base[:-1] if base.endswith("e") and len(base) > 3 else base


class Analyzer:
    """Turns text into normalised terms; the stop words and synonyms are replaceable.

    >>> Analyzer().terms("Show me the TOP clients by sales in 2024")
    ['top', 'customer', 'revenu', '2024']
    """

    def __init__(
        self,
        *,
        stop_words: Iterable[str] = STOP_WORDS,
        synonyms: Mapping[str, Iterable[str]] = DEFAULT_SYNONYMS,
    ) -> None:
        self.stop_words = frozenset(stop_words)
        self._canonical: dict[str, str] = {}
        for concept, words in synonyms.items():
            for word in [concept, *words]:
                self._canonical[stem(word)] = stem(concept)

    def terms(self, text: str) -> list[str]:
        found = []
        for word in _WORD.findall(text.lower()):
            if word in self.stop_words:
                continue
            stemmed = stem(word)
            found.append(self._canonical.get(stemmed, stemmed))
        return found


def _term_weight(term: str, count: int) -> float:
    weight = 1.0 + math.log(count)
    return weight * NUMBER_WEIGHT if term.isdigit() else weight


class RelevanceIndex:
    """An incremental TF-IDF index of short texts by key; ``search`` returns cosine scores.

    Memory back ends without embeddings share it: keep one index per scope, ``add`` and
    ``remove`` as memories come and go, ``search`` to rank. Only documents sharing a term with
    the query are scored (inverted index), so search cost follows the matches, not the size.

    >>> index = RelevanceIndex()
    >>> index.add(1, "orders last month")
    >>> index.search("how many orders were placed last month")[0][0]
    1
    """

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer or Analyzer()
        self._docs: dict[object, dict[str, float]] = {}
        """key -> term -> tf weight; IDF is applied at search time, as it moves with N"""
        self._postings: dict[str, dict[object, float]] = {}
        """term -> key -> tf weight (the inverted index)"""
        self._added: dict[object, int] = {}
        self._next_position = 0
        self._norms: dict[object, float] = {}
        """document norms under the current IDF; cleared whenever the corpus changes"""

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, key: object) -> bool:
        return key in self._docs

    def _weights(self, text: str) -> dict[str, float]:
        return {t: _term_weight(t, c) for t, c in Counter(self.analyzer.terms(text)).items()}

    def add(self, key: object, text: str) -> None:
        """Index ``text`` under ``key`` (replacing what the key had)."""
        self.remove(key)
        weights = self._weights(text)
        self._docs[key] = weights
        self._added[key] = self._next_position
        self._next_position += 1
        for term, weight in weights.items():
            self._postings.setdefault(term, {})[key] = weight
        self._norms.clear()

    def remove(self, key: object) -> None:
        weights = self._docs.pop(key, None)
        if weights is None:
            return
        self._added.pop(key, None)
        for term in weights:
            keys = self._postings[term]
            del keys[key]
            if not keys:
                del self._postings[term]
        self._norms.clear()

    def _idf_table(self) -> Callable[[str], float]:
        """A memoised IDF for one search (the corpus does not change during it)."""
        memo: dict[str, float] = {}
        n_plus_one = len(self._docs) + 1

        def idf(term: str) -> float:
            value = memo.get(term)
            if value is None:
                df = len(self._postings.get(term, ()))
                value = memo[term] = 1.0 + math.log(n_plus_one / (df + 1))
            return value

        return idf

    def _norm(self, key: object, idf: Callable[[str], float]) -> float:
        norm = self._norms.get(key)
        if norm is None:
            weights = self._docs[key]
            norm = self._norms[key] = math.sqrt(sum(w * w * idf(t) for t, w in weights.items()))
        return norm

    def _scores(
        self, query: str, where: Callable[[object], bool] | None, idf: Callable[[str], float]
    ) -> list[tuple[object, float]]:
        """Term-at-a-time cosine over the documents sharing a term with ``query``."""
        # weights are tf * sqrt(idf), so a product of two weights carries idf once
        query_weights = self._weights(query)
        query_norm = math.sqrt(sum(w * w * idf(t) for t, w in query_weights.items()))
        dots: dict[object, float] = {}
        for term, weight in query_weights.items():
            factor = weight * idf(term)
            for key, doc_weight in self._postings.get(term, {}).items():
                dots[key] = dots.get(key, 0.0) + factor * doc_weight
        return [
            (key, min(1.0, dot / (query_norm * self._norm(key, idf))))
            for key, dot in dots.items()
            if dot > 0.0 and (where is None or where(key))
        ]

    def score(self, query: str, key: object) -> float:
        """The similarity in [0, 1] of ``query`` to the document under ``key``."""
        scored = self._scores(query, lambda candidate: candidate == key, self._idf_table())
        return scored[0][1] if scored else 0.0

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        threshold: float = 0.0,
        where: Callable[[object], bool] | None = None,
    ) -> list[tuple[object, float]]:
        """``(key, score)`` best first, ties by insertion order; ``where(key)`` filters.

        Scores below ``threshold`` are dropped (and zero scores always are).
        """
        if not self._added:  # nothing indexed: skip analysing the query (hot path per turn)
            return []
        hits = sorted(
            (hit for hit in self._scores(query, where, self._idf_table()) if hit[1] >= threshold),
            key=lambda hit: (-hit[1], self._added[hit[0]]),
        )
        return hits if limit is None else hits[:limit]


def similarity(query: str, text: str, *, analyzer: Analyzer | None = None) -> float:
    """The similarity of two texts on their own (IDF is flat with no corpus).

    >>> round(similarity("sales by category", "revenue per product category"), 2)
    0.82
    """
    index = RelevanceIndex(analyzer)
    index.add(0, text)
    return index.score(query, 0)
