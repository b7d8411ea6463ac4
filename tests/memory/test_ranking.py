"""The lexical ranking behind memories without embeddings."""

from __future__ import annotations

import pytest

from agent_core.memory.ranking import Analyzer, RelevanceIndex, similarity, stem

CORPUS = [
    "which customers brought in the most revenue",
    "monthly revenue trend",
    "revenue by category",
    "how many orders last month",
    "top 10 products by units sold",
    "revenue by country",
    "average order value per month",
    "number of new customers per month",
    "customers who ordered more than 5 times",
    "total revenue in 2024",
    "top customers in Germany",
    "orders by status",
    "revenue by customer segment",
]


@pytest.fixture
def index() -> RelevanceIndex:
    built = RelevanceIndex()
    for position, text in enumerate(CORPUS):
        built.add(position, text)
    return built


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("top 5 customers by revenue", "which customers brought in the most revenue"),
        ("sales by category", "revenue by category"),
        ("how many orders did we get last month", "how many orders last month"),
        ("revenue over time by month", "monthly revenue trend"),
        ("show me a chart of sales per region", "revenue by country"),
        ("best selling items", "top 10 products by units sold"),
    ],
)
def test_paraphrases_rank_first_above_the_default_threshold(
    index: RelevanceIndex, query: str, expected: str
) -> None:
    [(key, score)] = index.search(query, limit=1, threshold=0.7)
    assert CORPUS[int(str(key))] == expected, (query, score)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("top 5 customers by revenue", "monthly revenue trend"),
        ("how many customers", "how many orders"),
        ("top customers by revenue", "top products by revenue"),
    ],
)
def test_different_questions_stay_under_the_default_threshold(left: str, right: str) -> None:
    assert similarity(left, right) < 0.7


def test_scores_are_bounded_and_identical_text_scores_one(index: RelevanceIndex) -> None:
    for text in CORPUS:
        hits = index.search(text, threshold=0.0)
        assert all(0.0 < score <= 1.0 for _, score in hits)
        assert hits[0][1] == pytest.approx(1.0)


def test_stop_words_alone_never_match(index: RelevanceIndex) -> None:
    assert index.search("show me what which is the") == []
    assert index.search("") == []


def test_shared_rare_terms_outrank_shared_common_terms(index: RelevanceIndex) -> None:
    [(first, _), *_rest] = index.search("revenue in Germany")
    assert CORPUS[int(str(first))] == "top customers in Germany"


def test_ties_keep_insertion_order() -> None:
    index = RelevanceIndex()
    index.add("first", "orders by status")
    index.add("second", "orders by status")
    assert [key for key, _ in index.search("orders by status")] == ["first", "second"]


def test_remove_and_replace() -> None:
    index = RelevanceIndex()
    index.add("a", "orders by status")
    index.add("a", "revenue by country")
    assert index.search("orders by status") == []
    index.remove("a")
    index.remove("never-added")
    assert len(index) == 0 and "a" not in index
    assert index.search("revenue by country") == []


def test_candidates_can_be_restricted() -> None:
    index = RelevanceIndex()
    index.add("run", "orders by status")
    index.add("chart", "orders by status")
    hits = index.search("orders by status", where=lambda key: key == "chart")
    assert [key for key, _ in hits] == ["chart"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["order", "orders", "ordered", "ordering"], "order"),
        (["category", "categories"], "category"),
        (["ship", "shipped", "shipping"], "ship"),
        (["purchase", "purchased", "purchases"], "purchas"),
    ],
)
def test_stemming_conflates_inflections(words: list[str], expected: str) -> None:
    assert {stem(w) for w in words} == {expected}


def test_short_words_and_numbers_are_kept_as_is() -> None:
    assert [stem(w) for w in ["is", "bus", "2024", "status"]] == ["is", "bus", "2024", "status"]


def test_analyzer_synonyms_are_configurable() -> None:
    analyzer = Analyzer(synonyms={"employee": ["staff", "headcount"]})
    assert analyzer.terms("staff by team") == analyzer.terms("employees by team")
    assert Analyzer().terms("Clients, SALES!") == ["customer", "revenu"]


def test_numbers_count_less_than_words() -> None:
    assert similarity("top customers 2024", "top customers 2023") > similarity(
        "top customers 2024", "top products 2024"
    )
