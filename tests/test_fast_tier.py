"""The fast tier and assembly, against a real DuckDB.

Every grammar shape is compiled from a question, executed on DuckDB and compared
with a hand-written oracle; questions outside the grammar must be declined, never
guessed. The example lenses' certified answers are re-asked exactly as the suite
does (answer excluded from its own exemplars) and must all come back correct.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import duckdb
import pytest

from reconciler.assembly.grain import KeyFact, WarehouseFacts
from reconciler.assembly.request import assemble
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import normalize, tokenize
from reconciler.errors import LensLoadError
from reconciler.generators import DimensionValues, generate
from reconciler.generators.fast import parse
from reconciler.ids import AnswerId
from reconciler.lens import Lens, load_lens
from tests.helpers.grammar import (
    CRM,
    CRM_SCHEMA,
    CUSTOMERS,
    ORDERS,
    SCHEMA,
    SHOP,
    SNAPSHOT,
    ask,
    dimension_values,
    grammar_cases,
    held,
    key_facts,
    same_rows,
)

LENSES_DIR = Path(__file__).resolve().parent.parent / "lenses"


@pytest.fixture(scope="module")
def shop() -> Lens:
    return load_lens("shop", SHOP)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("wh") / "shop.duckdb"))
    con.execute(SCHEMA)
    yield con
    con.close()


@pytest.fixture(scope="module")
def values(warehouse: duckdb.DuckDBPyConnection, shop: Lens) -> DimensionValues:
    return dimension_values(warehouse, shop)


# ---------------------------------------------------------------- grammar shapes

SHAPES = grammar_cases("shop", "shapes")


@pytest.mark.parametrize(
    ("question", "oracle"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_grammar_shape_returns_the_oracle_rows(
    shop: Lens,
    warehouse: duckdb.DuckDBPyConnection,
    values: DimensionValues,
    question: str,
    oracle: str,
) -> None:
    result = ask(shop, question, values)
    assert result.tier == "fast"
    assert result.sql is not None, result.declined
    held("shop", question, result)
    generated = warehouse.execute(result.sql).fetchall()
    expected = warehouse.execute(oracle).fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert same_rows(generated, expected), (result.sql, generated, expected)


def test_select_list_follows_the_sql_conventions(
    shop: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql = ask(shop, "Monthly net revenue by region in 2024", values).sql
    assert sql is not None
    cursor = warehouse.execute(sql)
    assert [d[0] for d in cursor.description] == ["month", "region", "net_revenue"]
    rows = cursor.fetchall()
    assert rows == sorted(rows, key=lambda r: (r[0], r[1]))  # series: bucket, then dims

    sql = ask(shop, "Net revenue by category", values).sql
    assert sql is not None
    rows = warehouse.execute(sql).fetchall()
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
    assert "DATE_TRUNC" not in sql and "LIMIT" not in sql


def test_value_matching_uses_the_stored_casing(shop: Lens, values: DimensionValues) -> None:
    sql = ask(shop, "net revenue for ELECTRONICS", values).sql
    assert sql is not None and "'Electronics'" in sql


def test_sample_values_work_without_warehouse_values(
    shop: Lens, warehouse: duckdb.DuckDBPyConnection
) -> None:
    no_values = WarehouseFacts({}, key_facts(warehouse, shop))  # join-key facts only
    sql = ask(shop, "Net revenue for the SMB segment", no_values).sql
    assert sql is not None and "'SMB'" in sql


def test_a_join_without_key_facts_is_declined(shop: Lens) -> None:
    # No warehouse facts: customers.customer_id may or may not be unique.
    result = ask(shop, "Net revenue for the SMB segment", {})
    assert result.sql is None and result.declined is not None
    assert "customers.customer_id is unique is unknown" in result.declined


def test_metric_expressions_and_filters_are_qualified(shop: Lens, values: DimensionValues) -> None:
    sql = ask(shop, "Net revenue by region", values).sql
    assert sql is not None
    assert "SUM(o.amount)" in sql and "o.status = 'completed'" in sql


# ---------------------------------------------------------------- declines

DECLINES = grammar_cases("shop", "declines")


@pytest.mark.parametrize(
    ("question", "reason"), [d[1:] for d in DECLINES], ids=[d[0] for d in DECLINES]
)
def test_outside_the_grammar_is_declined(
    shop: Lens, values: DimensionValues, question: str, reason: str
) -> None:
    result = ask(shop, question, values)
    assert result.sql is None
    assert result.declined is not None and reason in result.declined, result.declined
    held("shop", question, result)


def test_ambiguous_dimension_is_declined(values: DimensionValues) -> None:
    stores = b"name: stores\ntable: stores\ndimensions:\n  - name: region\n"
    orders = ORDERS + b"  - to: stores\n    on: {store_id: store_id}\n"
    lens = load_lens("shop", {**SHOP, "models/stores.yaml": stores, "models/orders.yaml": orders})
    result = ask(lens, "Net revenue by region", values)
    assert result.sql is None and result.declined is not None
    assert "ambiguous" in result.declined and "stores.region" in result.declined
    # Naming the model settles it (the test's warehouse has no stores table: its key
    # fact is stated here).
    assert isinstance(values, WarehouseFacts)
    store_key = KeyFact("stores", ("store_id",), True)
    facts = WarehouseFacts(values, {**values.key_facts, ("stores", ("store_id",)): store_key})
    settled = ask(lens, "Net revenue by stores region", facts).sql
    assert settled is not None and "stores" in settled


def test_missing_join_is_declined(values: DimensionValues) -> None:
    orders = ORDERS.replace(b"  - to: products\n    on: {product_id: product_id}\n", b"")
    lens = load_lens("shop", {**SHOP, "models/orders.yaml": orders})
    result = ask(lens, "Net revenue by category", values)
    assert result.sql is None and result.declined is not None
    assert "no declared join" in result.declined


def test_fan_out_join_is_declined(values: DimensionValues) -> None:
    customers = CUSTOMERS.replace(
        b"  - to: regions\n", b"  - to: regions\n    relationship: one_to_many\n"
    )
    lens = load_lens("shop", {**SHOP, "models/customers.yaml": customers})
    result = ask(lens, "Net revenue by region", values)
    assert result.declined is not None and "fan out" in result.declined


def test_excluded_and_clarify_terms_are_declined(values: DimensionValues) -> None:
    config = (
        b"name: shop\nexclusions: [salary]\n"
        b"clarify:\n  - term: performance\n    ask: Which measure?\n"
    )
    salary = b"name: salary\nmodel: orders\nexpression: SUM(amount)\n"
    lens = load_lens("shop", {**SHOP, "lens.yaml": config, "metrics/salary.yaml": salary})
    refused = ask(lens, "Salary by region", values)
    assert refused.declined is not None and "excludes" in refused.declined
    unclear = ask(lens, "Net revenue performance by region", values)
    assert unclear.declined is not None and "Which measure?" in unclear.declined


def test_no_reachable_time_dimension_is_declined(values: DimensionValues) -> None:
    customers = b"name: customer_count\nmodel: customers\nexpression: COUNT(*)\n"
    lens = load_lens("shop", {**SHOP, "metrics/customer_count.yaml": customers})
    assert ask(lens, "Customer count by segment", values).sql is not None
    result = ask(lens, "Customer count in 2024", values)
    assert result.declined is not None and "time dimension" in result.declined


def test_facts_with_expressions_and_qualified_columns_are_expanded(
    warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    orders = ORDERS.replace(
        b"  - name: amount\n",
        b"  - name: amount\n  - name: line_value\n    expr: quantity * amount\n",
    )
    metric = (
        b"name: weighted\nmodel: orders\nexpression: SUM(line_value)\n"
        b"filters: [\"customers.segment <> 'SMB'\"]\n"
    )
    lens = load_lens(
        "shop", {**SHOP, "models/orders.yaml": orders, "metrics/weighted.yaml": metric}
    )
    sql = ask(lens, "Weighted by category", values).sql
    assert sql is not None
    assert "o.quantity * o.amount" in sql and "c.segment <> 'SMB'" in sql
    oracle = (
        "SELECT category, SUM(quantity * amount) FROM orders JOIN products USING (product_id) "
        "JOIN customers USING (customer_id) WHERE segment <> 'SMB' GROUP BY 1"
    )
    generated = warehouse.execute(sql).fetchall()
    assert same_rows(generated, warehouse.execute(oracle).fetchall())


def test_ambiguous_metric_synonym_is_declined(values: DimensionValues) -> None:
    gross = b"name: gross_revenue\nsynonyms: [revenue]\nmodel: orders\nexpression: SUM(amount)\n"
    lens = load_lens("shop", {**SHOP, "metrics/gross_revenue.yaml": gross})
    result = ask(lens, "revenue by region", values)
    assert result.declined is not None and "several metrics" in result.declined
    assert ask(lens, "net revenue by region", values).sql is not None  # longest match


# ---------------------------------------------------------------- fact aggregates, "who", flags


@pytest.fixture(scope="module")
def crm() -> Lens:
    return load_lens("crm", CRM)


@pytest.fixture(scope="module")
def crm_warehouse(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("crm") / "crm.duckdb"))
    con.execute(CRM_SCHEMA)
    yield con
    con.close()


@pytest.fixture(scope="module")
def crm_values(crm_warehouse: duckdb.DuckDBPyConnection, crm: Lens) -> DimensionValues:
    return dimension_values(crm_warehouse, crm)


FACT_SHAPES = grammar_cases("crm", "shapes")


@pytest.mark.parametrize(
    ("question", "oracle"), [s[1:] for s in FACT_SHAPES], ids=[s[0] for s in FACT_SHAPES]
)
def test_fact_who_and_flag_shapes_return_the_oracle_rows(
    crm: Lens,
    crm_warehouse: duckdb.DuckDBPyConnection,
    crm_values: DimensionValues,
    question: str,
    oracle: str,
) -> None:
    result = ask(crm, question, crm_values)
    assert result.sql is not None, result.declined
    held("crm", question, result)
    generated = crm_warehouse.execute(result.sql).fetchall()
    expected = crm_warehouse.execute(oracle).fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert same_rows(generated, expected), (result.sql, generated, expected)


def test_fact_aggregate_follows_the_sql_conventions(
    crm: Lens, crm_warehouse: duckdb.DuckDBPyConnection, crm_values: DimensionValues
) -> None:
    sql = ask(crm, "Average deal size by industry", crm_values).sql
    assert sql is not None and "AVG(d.amount)" in sql
    cursor = crm_warehouse.execute(sql)
    assert [d[0] for d in cursor.description] == ["industry", "avg_amount"]
    # Without an aggregation word the phrase is still the metric.
    plain = ask(crm, "Deal size by industry", crm_values).sql
    assert plain is not None and "SUM(d.amount) AS amount" in plain


def test_the_amount_fact_of_the_shop_lens_can_be_averaged(
    shop: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql = ask(shop, "Average amount by region", values).sql
    assert sql is not None
    oracle = (
        "SELECT region_name, AVG(amount) FROM orders JOIN customers USING (customer_id) "
        "JOIN regions USING (region_id) GROUP BY 1"
    )
    assert same_rows(warehouse.execute(sql).fetchall(), warehouse.execute(oracle).fetchall())


FACT_DECLINES = grammar_cases("crm", "declines")


@pytest.mark.parametrize(
    ("question", "reason"), [d[1:] for d in FACT_DECLINES], ids=[d[0] for d in FACT_DECLINES]
)
def test_fact_who_and_flag_questions_outside_the_grammar_are_declined(
    crm: Lens, crm_values: DimensionValues, question: str, reason: str
) -> None:
    result = ask(crm, question, crm_values)
    assert result.sql is None, result.sql
    assert result.declined is not None and reason in result.declined, result.declined
    held("crm", question, result)


def test_a_grain_word_in_a_fact_phrase_declines_even_without_a_key(
    crm_values: DimensionValues,
) -> None:
    keyless = SNAPSHOT.replace(b"primary_key: [day, store]\n", b"")
    lens = load_lens("crm", {**CRM, "models/store_days.yaml": keyless})
    assert ask(lens, "Average store sales by store", crm_values).sql is not None
    result = ask(lens, "Average daily visits by store", crm_values)
    assert result.declined is not None and "per-period" in result.declined


def test_who_needs_one_person_dimension(shop: Lens, values: DimensionValues) -> None:
    result = ask(shop, "Who had the most units sold?", values)
    assert result.declined is not None and "no dimension of the lens names one" in result.declined
    # A relative "who" is an ordinary word, as before.
    relative = ask(shop, "Number of orders by customers who are in the West region", values)
    assert relative.sql is not None, relative.declined


def test_assembly_selects_fact_person_and_flag_models(crm: Lens) -> None:
    assert assemble(crm, "Mean probability by industry").models == ("accounts", "deals")
    assert assemble(crm, "Who has the highest revenue?").models == ("deals", "reps")
    assert assemble(crm, "Average deal size of won deals").models == ("deals",)
    found = retrieve(crm, "average deal size of won deals")
    kinds = [(m.kind, m.targets[0].name) for m in found.mentions]
    assert kinds == [("metric", "amount"), ("flag", "is_won")]
    assert [f.name for f in found.mentions[0].facts] == ["amount"]


# ---------------------------------------------------------------- assembly


def test_normalization_is_case_punctuation_and_plural_blind() -> None:
    assert normalize("Net Revenue, by Product-Categories?") == "net revenue by product category"
    assert tokenize("customer's boxes branches") == ("customer", "box", "branch")
    assert normalize("status analysis") == "status analysis"


def test_retrieval_prefers_the_longest_phrase(shop: Lens) -> None:
    found = retrieve(shop, "average order value by customer segment")
    assert found.metrics() == ("average_order_value",)
    kinds = [(m.kind, m.targets[0].name) for m in found.mentions]
    assert kinds == [("metric", "average_order_value"), ("dimension", "segment")]


@pytest.mark.parametrize(
    ("question", "metrics", "models"),
    [
        ("How many orders were placed in 2024?", ("order_count",), ("orders",)),
        ("Net revenue by region", ("net_revenue",), ("customers", "orders", "regions")),
        ("Net revenue for the SMB segment", ("net_revenue",), ("customers", "orders")),
        ("Units sold per product category", ("units_sold",), ("orders", "products")),
        ("What is the weather in Paris?", (), ()),
    ],
)
def test_assembly_selects_only_what_the_question_names(
    shop: Lens, question: str, metrics: tuple[str, ...], models: tuple[str, ...]
) -> None:
    request = assemble(shop, question)
    assert request.metrics == metrics
    assert request.models == models
    assert request.skills == ("skills/style.md",)
    assert request.tiers == ("fast",)
    expected = {f"metrics/{m}" for m in metrics} | {f"models/{m}" for m in models}
    assert request.used_assets() == frozenset(expected | {"skills/style.md"})


def test_assembly_follows_joins_transitively() -> None:
    # region lives two joins away; customers is on the path and is selected too.
    lens = load_lens("shop", SHOP)
    assert assemble(lens, "orders by sales region").models == ("customers", "orders", "regions")


ANSWER = """\
id: {id}
question: "{question}"
sql: "{sql}"
status: active
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


def _with_exemplars() -> Lens:
    files = dict(SHOP)
    files["answers/rev_2024.yaml"] = ANSWER.format(
        id="rev_2024",
        question="What was net revenue in 2024?",
        sql="SELECT SUM(amount) FROM orders WHERE status = 'completed' AND year(order_date)=2024",
    ).encode()
    exemplars = {
        # Same question, other punctuation and case.
        "same_question": ("what was NET revenue in 2024", "SELECT 1"),
        # Another question, but the answer's SQL reformatted with a comment.
        "same_sql": (
            "Net revenue during 2024",
            "select sum(amount) -- total\\nfrom orders where status = 'completed' "
            "and YEAR(order_date) = 2024",
        ),
        # Similar, but not one slot away (a breakdown more): never served.
        "similar": ("What was net revenue in 2023 by region?", "SELECT 2"),
        "unrelated": ("Orders per category", "SELECT 3"),
    }
    for name, (question, sql) in exemplars.items():
        files[f"exemplars/{name}.yaml"] = (
            f'name: {name}\nquestion: "{question}"\nsql: "{sql}"\n'
        ).encode()
    return load_lens("shop", files)


def test_the_answer_under_test_is_never_folded_as_an_exemplar() -> None:
    lens = _with_exemplars()
    question = lens.answers[AnswerId("rev_2024")].question
    free = assemble(lens, question)
    assert set(free.exemplars) == {"same_question", "same_sql", "similar"}
    assert free.exemplars[0] == "same_question"  # most similar first

    excluded = assemble(lens, question, exclude_answer=AnswerId("rev_2024"))
    assert excluded.exemplars == ("similar",)
    assert excluded.excluded_answer == "rev_2024"
    assert "exemplars/same_question" not in excluded.used_assets()


def test_an_exact_exemplar_is_served_only_when_folded() -> None:
    lens = _with_exemplars()
    question = lens.answers[AnswerId("rev_2024")].question
    served = generate(lens, assemble(lens, question), {})
    assert served.sql == "SELECT 1"
    compiled = generate(lens, assemble(lens, question, exclude_answer=AnswerId("rev_2024")), {})
    assert compiled.sql is not None and "SUM(o.amount)" in compiled.sql


def test_unknown_excluded_answer_is_an_error(shop: Lens) -> None:
    with pytest.raises(KeyError):
        assemble(shop, "Net revenue", exclude_answer=AnswerId("nope"))


# ---------------------------------------------------------------- tiers


def _with_tiers(tiers: str) -> Lens:
    return load_lens(
        "shop", {**SHOP, "lens.yaml": f"name: shop\ngenerator:\n  tiers: {tiers}\n".encode()}
    )


def test_smart_alone_declines_as_not_configured() -> None:
    lens = _with_tiers("[smart]")
    result = ask(lens, "Net revenue by region", {})
    assert (result.tier, result.sql, result.declined) == (
        "smart",
        None,
        "smart tier not configured",
    )


def test_fast_then_smart_keeps_the_fast_answer_or_reason() -> None:
    lens = _with_tiers("[fast, smart]")
    assert ask(lens, "Net revenue by region", {}).tier == "fast"
    declined = ask(lens, "What is the weather in Paris?", {})
    assert declined.tier == "fast" and declined.sql is None


def test_parse_is_consistent_with_assembly(shop: Lens, values: DimensionValues) -> None:
    plan = parse(shop, "Top 2 product categories by net revenue in 2024", values)
    assert (plan.measure.name, plan.breakdowns, plan.rank) == (
        "net_revenue",
        (("products", "category"),),
        (True, 2),
    )


# ---------------------------------------------------------------- example lenses


def _lens_files(name: str) -> Mapping[str, bytes]:
    root = LENSES_DIR / name
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def example_warehouse(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("examples") / "examples.duckdb"))
    for csv in sorted(LENSES_DIR.glob("*/seeds/*.csv")):
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {csv.stem.lower()} AS SELECT * FROM read_csv_auto(?)",
            [str(csv)],
        )
    yield con
    con.close()


def _example_answers() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name in ("sales", "finance"):
        if not (LENSES_DIR / name / "lens.yaml").exists():
            continue
        try:
            lens = load_lens(name, _lens_files(name))
        except LensLoadError:
            out.append((name, "(lens does not load)"))  # the test reports the load error
            continue
        out.extend((name, answer.id) for answer in lens.active_answers())
    return out


EXAMPLES = _example_answers()


@pytest.mark.skipif(not EXAMPLES, reason="the example lenses are not in this checkout")
@pytest.mark.parametrize(
    ("lens_name", "answer_id"), EXAMPLES, ids=[f"{n}/{a}" for n, a in EXAMPLES]
)
def test_example_answer_is_reproduced(
    example_warehouse: duckdb.DuckDBPyConnection, lens_name: str, answer_id: str
) -> None:
    lens = load_lens(lens_name, _lens_files(lens_name))
    answer = lens.answers[AnswerId(answer_id)]
    request = assemble(lens, answer.question, exclude_answer=AnswerId(answer_id))
    result = generate(lens, request, dimension_values(example_warehouse, lens))
    assert result.sql is not None, f"declined: {result.declined}"
    generated = example_warehouse.execute(result.sql).fetchall()
    expected = example_warehouse.execute(answer.sql).fetchall()
    assert same_rows(generated, expected), (result.sql, generated[:5], expected[:5])
