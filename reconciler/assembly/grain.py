"""Join-grain facts: is the "one" side of each many-to-one join unique on its key? (pure)

DESIGN §1 "join-grain gate": a generated query may join through a many-to-one
(or one-to-one) join only when the "one" side holds each join-key value once in
the warehouse; otherwise every row of the other side is repeated as often as
the key value is, and a SUM over it is multiplied. A lens *declares* the
relationship; the warehouse decides whether it holds.

The facts are read once per data version with one bounded, guarded query per
key (:func:`duplicate_key_sql`: the first duplicated key value, if any) and
cached beside the value profiles (:meth:`reconciler.assembly.profiles.ProfileStore.key_fact`,
same directory, key and data-version rules). They reach the generators with the
dimension values, as one :class:`WarehouseFacts` mapping, so the generators stay
pure. Without facts — a plain mapping, as a caller with no warehouse passes —
uniqueness is *unknown*, and a join is never trusted on its declaration alone:
:func:`join_doubt` names the join, and the fast tier declines it. The suite,
``dst ask`` and ``dst certify`` always gather facts, because they always have a
warehouse.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from reconciler.assembly.joins import Reversal, bare_key
from reconciler.assembly.lexicon import DimensionValues, model_named
from reconciler.errors import UnsafeSqlError
from reconciler.lens import Join, Lens

KeyPlace = tuple[str, tuple[str, ...]]  # (model on the "one" side, its join-key columns)


@dataclass(frozen=True)
class KeyFact:
    """What the warehouse says about one join key.

    Attributes:
        model: the model on the "one" side of the join.
        columns: its join-key columns (the join's ``on`` values), in declared order.
        unique: ``True`` when no key value occurs twice, ``False`` when one does,
            ``None`` when the check could not run.
        detail: for a duplicate, the first duplicated value and how often it
            occurs (``customer_id = 7 occurs 23 times``); for a failed check, why.
    """

    model: str
    columns: tuple[str, ...]
    unique: bool | None
    detail: str = ""

    def record(self) -> dict[str, object]:
        """JSON-ready form (the cache entry's ``key_fact``)."""
        return {"unique": self.unique, "detail": self.detail}


class WarehouseFacts(Mapping[tuple[str, str], tuple[str, ...]]):
    """Dimension values (the mapping itself) plus the join-key facts (:attr:`key_facts`).

    Reads as a :data:`~reconciler.assembly.lexicon.DimensionValues` everywhere one
    is expected, so value filters work unchanged; the join-grain checks read
    :attr:`key_facts` (``{(model, key columns): KeyFact}``).
    """

    def __init__(
        self,
        values: DimensionValues,
        keys: Mapping[KeyPlace, KeyFact],
    ) -> None:
        self._values = dict(values)
        self.key_facts: Mapping[KeyPlace, KeyFact] = dict(keys)

    def __getitem__(self, key: tuple[str, str]) -> tuple[str, ...]:
        return self._values[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def one_sides(lens: Lens) -> tuple[KeyPlace, ...]:
    """Every ``(model, key columns)`` some declared many-to-one or one-to-one join
    reaches, sorted; joins to a model the lens does not declare are left out."""
    places = {
        (join.to, tuple(join.on.values()))
        for model in lens.models.values()
        for join in model.joins
        if join.relationship != "one_to_many" and join.to in lens.models
    }
    return tuple(sorted(places))


def duplicate_key_sql(table: str, columns: tuple[str, ...], dialect: str) -> str:
    """``SELECT k…, COUNT(*) FROM table GROUP BY k… HAVING COUNT(*) > 1 LIMIT 1``.

    One bounded query: it returns the first duplicated key value (with its count)
    or no row. Rows whose key holds a NULL are left out (a NULL key joins nothing).

    Raises:
        UnsafeSqlError: ``table`` is not a ``[schema.]name``.
    """
    try:
        source = exp.to_table(table, dialect=dialect)
    except (ParseError, ValueError):
        raise UnsafeSqlError(
            f"table {table!r} is not a table name",
            fix="write the model's table as [schema.]name",
        ) from None
    keys = [exp.column(c) for c in columns]
    count = exp.Count(this=exp.Star())
    query = (
        exp.select(*keys, exp.alias_(count, "occurrences"))
        .from_(source)
        .where(exp.and_(*(k.copy().is_(exp.null()).not_() for k in keys)))
        .group_by(*(k.copy() for k in keys))
        .having(count.copy() > exp.Literal.number(1))
        .limit(1)
    )
    return normalize_identifiers(query, dialect=dialect).sql(dialect=dialect, identify=True)


def duplicate_detail(columns: tuple[str, ...], row: tuple[object, ...]) -> str:
    """``customer_id = 7 occurs 23 times`` for a row of :func:`duplicate_key_sql`."""
    keys = ", ".join(f"{c} = {v!r}" for c, v in zip(columns, row, strict=False))
    return f"{keys} occurs {row[len(columns)]} times"


def join_doubt(values: DimensionValues, here: str, join: Join) -> str | None:
    """Why the join ``here → join.to`` is not proven safe, or ``None`` when it is.

    A many-to-one or one-to-one join is safe only when :class:`WarehouseFacts` say its
    "one" side is unique on the key; so is a declared join walked backwards (a
    :class:`~reconciler.assembly.joins.Reversal`, whose "one" side is ``here``). A
    declared one-to-many join has no "one" side to check: whether the measure may be
    taken through it is the generator's business.
    """
    one, columns, name = join.to, tuple(join.on.values()), f"join {here} → {join.to}"
    if isinstance(join, Reversal):
        one, columns, name = here, tuple(join.on), f"join {join.to} → {here} (walked backwards)"
    elif join.relationship == "one_to_many":
        return None
    key = f"{one}.{', '.join(columns)}"
    if not isinstance(values, WarehouseFacts):
        return f"{name}: whether {key} is unique is unknown (no warehouse facts were gathered)"
    fact = values.key_facts.get((one, columns))
    if fact is None or fact.unique is None:
        why = fact.detail if fact is not None and fact.detail else "not checked"
        return f"{name}: could not check that {key} is unique in the warehouse ({why})"
    if not fact.unique:
        return f"{name}: {key} is not unique in the warehouse ({fact.detail})"
    return None


def key_duplicated(values: DimensionValues, join: Join) -> bool:
    """Whether the facts *prove* the join's "one" side holds a key value twice."""
    if not isinstance(values, WarehouseFacts):
        return False
    fact = values.key_facts.get((join.to, tuple(join.on.values())))
    return fact is not None and fact.unique is False


def joins_used(tree: exp.Expr, lens: Lens) -> tuple[tuple[str, Join], ...]:
    """The lens's many-to-one and one-to-one joins a parsed query performs.

    A join counts as performed when the query equates every key pair of its
    ``on`` (``ON o.customer_id = c.customer_id``, ``USING (customer_id)``, or the
    same equality in a WHERE) between columns qualified by the two models' tables
    or aliases. A side pre-aggregated in a subquery is not a table of the lens
    there, so a query that groups the "one" side before joining is not flagged.

    Returns:
        ``((from model, join), ...)`` in the lens's model and join order.
    """
    # one walk (breadth first, as find_all) for the three kinds of node read below
    nodes = list(tree.find_all(exp.Table, exp.EQ, exp.Join))
    aliases: dict[str, str] = {}
    for table in (n for n in nodes if isinstance(n, exp.Table)):
        model = model_named(lens, table.name)
        if model is not None:
            aliases[table.alias_or_name.lower()] = model
    equal: set[tuple[tuple[str, str], tuple[str, str]]] = set()

    def pair(a: tuple[str, str], b: tuple[str, str]) -> None:
        equal.update({(a, b), (b, a)})

    for eq in (n for n in nodes if isinstance(n, exp.EQ)):
        left, right = bare_key(eq.this), bare_key(eq.expression)
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            a, b = aliases.get(left.table.lower()), aliases.get(right.table.lower())
            if a is not None and b is not None and a != b:
                pair((a, left.name.lower()), (b, right.name.lower()))
    for join in (n for n in nodes if isinstance(n, exp.Join)):
        joined = join.this
        using = join.args.get("using") or []
        if not using or not isinstance(joined, exp.Table):
            continue
        model = aliases.get(joined.alias_or_name.lower())
        for other in set(aliases.values()) - {model}:
            for column in using:
                name = column.name.lower()
                if model is not None:
                    pair((other, name), (model, name))
    return tuple(
        (model.name, join)
        for model in lens.models.values()
        for join in model.joins
        if join.relationship != "one_to_many"
        and all(
            ((model.name, a.lower()), (join.to, b.lower())) in equal for a, b in join.on.items()
        )
    )
