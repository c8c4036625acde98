"""Shortest declared-join paths between a lens's models (pure).

Assembly asks, for every model a question names, which models lie on the
shortest join paths to it from the question's metric and fact models; the fast
tier asks the same to render its joins. The answers depend on the lens version
alone, so each source model is searched once per lens version
(:mod:`reconciler.assembly.memo`) and every path set is kept: a plan over 50 answers
of a lens with ~80 models makes a few thousand distinct path queries, not
millions of breadth-first searches.
"""

from __future__ import annotations

from collections import deque

from reconciler.assembly import memo as lensmemo
from reconciler.lens import Join, Lens

Edge = tuple[str, Join]
Path = tuple[Edge, ...]


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

    def models_between(self, source: str, target: str) -> frozenset[str]:
        """Models on any shortest path from ``source`` to ``target`` (both ends included
        when a path joins them; empty when ``target`` is unreachable or is ``source``)."""
        key = (source, target)
        found = self._models.get(key)
        if found is None:
            on_path = frozenset(
                name
                for path in self.paths(source, target)
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
