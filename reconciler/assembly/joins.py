"""Shortest declared-join paths between a lens's models (pure).

Assembly asks, for every model a question names, which models lie on the
shortest join paths to it from the question's metric and fact models; the fast
tier asks the same to render its joins. The answers depend on the lens version
alone, so each source model is searched once per lens version
(:mod:`reconciler.assembly.memo`) and every path set is kept: a plan over 50 answers
of a lens with ~80 models makes a few thousand distinct path queries, not
millions of breadth-first searches.

A model no declared path reaches may still be *related* to the source through one
hop against a join's direction (:func:`related_paths`): ``authors ← authorships →
papers``, ``reviews → businesses ← categories``. Such a path repeats the source's
rows once per related row, so only a measure that repeated rows cannot change may
be taken through it; the fast tier decides that
(:func:`reconciler.reading.compile.plan_edges`).
"""

from __future__ import annotations

import re
from collections import deque

from sqlglot import exp

from reconciler.assembly import memo as lensmemo
from reconciler.lens import Join, Lens

Edge = tuple[str, Join]
Path = tuple[Edge, ...]


class Reversal(Join):
    """A declared join walked backwards: from its "one" side to the model declaring it.

    ``to`` is the declaring model and ``on`` maps the "one" side's key columns to the
    declaring model's columns (the declared ``on`` turned around), so it renders like
    any join; ``relationship`` is ``one_to_many``, because each row of the "one" side
    meets every row that refers to it. :func:`reconciler.assembly.grain.join_doubt`
    still checks the declared join's "one" side.
    """


def reversal(declaring: str, join: Join) -> Reversal:
    """The join ``declaring → join.to`` walked from ``join.to`` back to ``declaring``."""
    turned = {theirs: ours for ours, theirs in join.on.items()}
    return Reversal(to=declaring, relationship="one_to_many", on=turned)


def _steps(lens: Lens, here: str) -> list[tuple[Edge, bool]]:
    """``((here, join), fans out)`` for every hop from ``here``: its declared joins (a
    declared ``one_to_many`` fans out), and every many-to-one or one-to-one join
    declared *to* it, walked backwards (always fans out). A declared ``one_to_many``
    is never walked backwards: its "one" side has no uniqueness fact to check."""
    model = lens.models.get(here)
    out = [((here, j), j.relationship == "one_to_many") for j in (model.joins if model else ())]
    for other in sorted(lens.models):
        for j in lens.models[other].joins:
            if j.to == here and j.relationship != "one_to_many" and other != here:
                out.append(((here, reversal(other, j)), True))
    return out


class JoinIndex:
    """The shortest join paths of one lens version, computed on demand and kept.

    Instances are shared between threads; a lookup that races another computes
    the same pure value twice, never a wrong one.
    """

    def __init__(self, lens: Lens) -> None:
        self._lens = lens
        self._searched: dict[str, dict[str, list[Edge]]] = {}
        self._paths: dict[tuple[str, str], tuple[Path, ...]] = {}
        self._models: dict[tuple[str, str], frozenset[str]] = {}
        self._united: dict[tuple[frozenset[str], str], frozenset[str]] = {}
        self._related: dict[tuple[str, str], tuple[Path, ...]] = {}

    def _search(self, source: str) -> dict[str, list[Edge]]:
        """Breadth-first from ``source``: ``{reached model: its edges on shortest paths}``.

        ``source`` itself maps to ``[]``; an unreachable model is absent.
        """
        found = self._searched.get(source)
        if found is not None:
            return found
        dist = {source: 0}
        parents: dict[str, list[Edge]] = {source: []}
        queue = deque([source])
        while queue:
            here = queue.popleft()
            model = self._lens.models.get(here)
            for join in model.joins if model else ():
                if join.to not in dist:
                    dist[join.to] = dist[here] + 1
                    queue.append(join.to)
                if dist[join.to] == dist[here] + 1:
                    parents.setdefault(join.to, []).append((here, join))
        return self._searched.setdefault(source, parents)

    def reachable(self, source: str) -> frozenset[str]:
        """Models with a join path from ``source``, ``source`` itself included."""
        return frozenset(self._search(source))

    def paths(self, source: str, target: str) -> tuple[Path, ...]:
        """Every shortest path from ``source`` to ``target``: see :func:`join_paths`."""
        key = (source, target)
        found = self._paths.get(key)
        if found is not None:
            return found
        if source == target:
            return self._paths.setdefault(key, ((),))
        parents = self._search(source)
        if target not in parents:
            return self._paths.setdefault(key, ())

        def back(node: str) -> list[Path]:
            if node == source:
                return [()]
            return [(*p, edge) for edge in parents[node] for p in back(edge[0])]

        return self._paths.setdefault(key, tuple(back(target)))

    def related(self, source: str, target: str) -> tuple[Path, ...]:
        """Every shortest related path from ``source`` to ``target``: see :func:`related_paths`."""
        key = (source, target)
        found = self._related.get(key)
        if found is None:
            found = self._related.setdefault(key, self._search_related(source, target))
        return found

    def _search_related(self, source: str, target: str) -> tuple[Path, ...]:
        """Breadth-first over ``(model, fanned out yet)`` states, keeping every shortest
        path that ends fanned out and visits no model twice."""
        frontier: list[tuple[str, bool, Path]] = [(source, False, ())]
        seen = {(source, False)}
        while frontier:
            reached = tuple(p for m, fanned, p in frontier if m == target and fanned)
            if reached:
                return reached
            step: list[tuple[str, bool, Path]] = []
            for here, fanned, path in frontier:
                visited = {source, *(j.to for _, j in path)}
                for edge, fans in _steps(self._lens, here):
                    state = (edge[1].to, fanned or fans)
                    if (fanned and fans) or edge[1].to in visited or state in seen:
                        continue
                    step.append((*state, (*path, edge)))
            seen.update((m, f) for m, f, _ in step)
            frontier = step
        return ()

    def models_between(self, source: str, target: str) -> frozenset[str]:
        """Models on any shortest path from ``source`` to ``target`` (both ends included
        when a path joins them; empty when ``target`` is unreachable or is ``source``);
        when no declared path reaches ``target``, the models on its related paths."""
        key = (source, target)
        found = self._models.get(key)
        if found is None:
            on_path = frozenset(
                name
                for path in self.paths(source, target) or self.related(source, target)
                for here, join in path
                for name in (here, join.to)
            )
            found = self._models.setdefault(key, on_path)
        return found

    def models_from(self, sources: frozenset[str], target: str) -> frozenset[str]:
        """:meth:`models_between` of each of ``sources`` and ``target``, united."""
        key = (sources, target)
        found = self._united.get(key)
        if found is None:
            united = frozenset().union(*(self.models_between(s, target) for s in sources))
            found = self._united.setdefault(key, united)
        return found


def join_index(lens: Lens) -> JoinIndex:
    """The (shared) join index of ``lens``."""
    return lensmemo.memoized(lens, "join_index", lambda: JoinIndex(lens))


def join_paths(lens: Lens, source: str, target: str) -> list[Path]:
    """Every shortest path of declared joins from model ``source`` to ``target``.

    Joins are followed in their declared direction only (from the model that
    declares them), so a many-to-one chain never fans the source's rows out.

    Returns:
        ``[]`` when ``target`` is unreachable, ``[()]`` when it is ``source``,
        otherwise each path as ``((from model, join), ...)``, in breadth-first
        discovery order. A new list each call (the paths are shared tuples).
    """
    return list(join_index(lens).paths(source, target))


def related_paths(lens: Lens, source: str, target: str) -> list[Path]:
    """Every shortest path from ``source`` to ``target`` that walks exactly one hop
    against a join's direction (a :class:`Reversal`) or along a declared
    ``one_to_many`` join, every other hop a declared many-to-one or one-to-one join.

    ``papers ← paper_datasets → datasets`` (a bridge model), ``courses ← offerings``,
    ``reviews → businesses ← categories``; never two such hops (``authors ←
    authorships → papers ← paper_keyphrases → keyphrases`` relates authors to
    keyphrases only through papers, a second fan-out), never a model twice.

    Returns:
        ``[]`` when there is none (or ``target`` is ``source``), else the paths as
        :func:`join_paths` gives them. A new list each call.
    """
    if source == target:
        return []
    return list(join_index(lens).related(source, target))


_TEXT_TYPE = re.compile(r"^\s*(string|text|varchar|char|character|nvarchar|nchar|clob)\b", re.I)


def _key_type(lens: Lens, model: str, column: str) -> str | None:
    """The declared ``data_type`` of the column of ``model`` whose SQL is ``column``."""
    found = lens.models.get(model)
    if found is None:
        return None
    for col in found.columns():
        if col.sql.strip('"`').lower() == column.lower():
            return col.data_type
    return None


def keys_differ(lens: Lens, here: str, a: str, there: str, b: str) -> bool:
    """Whether key ``here.a`` and key ``there.b`` are declared one as text, one not.

    DuckDB compares a text column with a number by casting implicitly; PostgreSQL
    refuses (``character varying = bigint``). Two numeric keys of different widths,
    or a date and a timestamp, compare natively everywhere and are not flagged.
    """
    left, right = _key_type(lens, here, a), _key_type(lens, there, b)
    if left is None or right is None:
        return False
    return (_TEXT_TYPE.match(left) is None) != (_TEXT_TYPE.match(right) is None)


def as_text(column: exp.Expr) -> exp.Expr:
    """``CAST(column AS TEXT)`` (rendered ``CHAR`` on MySQL/MariaDB by sqlglot)."""
    return exp.Cast(this=column, to=exp.DataType.build("text"))


def key_pair(lens: Lens, here: tuple[str, str, str], there: tuple[str, str, str]) -> exp.Expr:
    """``<alias>.<key> = <alias>.<key>`` for two ``(model, key column, alias)``, compared
    as text on both sides when the lens declares the two keys of different kinds
    (:func:`keys_differ`); a pair of matching kinds is left exactly as it was."""
    near, far = exp.column(here[1], here[2]), exp.column(there[1], there[2])
    if keys_differ(lens, here[0], here[1], there[0], there[1]):
        return exp.EQ(this=as_text(near), expression=as_text(far))
    return exp.EQ(this=near, expression=far)


def key_equalities(lens: Lens, here: str, join: Join, left: str, right: str) -> list[exp.Expr]:
    """Every key pair of ``join`` from ``here`` as :func:`key_pair` builds it."""
    return [key_pair(lens, (here, a, left), (join.to, b, right)) for a, b in join.on.items()]


def bare_key(node: exp.Expr) -> exp.Expr:
    """``node`` without a :func:`as_text` cast around it (a key column stays a column)."""
    while isinstance(node, exp.Cast) and isinstance(node.this, exp.Column | exp.Cast):
        node = node.this
    return node
