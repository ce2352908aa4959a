"""The Gaifman graph of a query's canonical structure, and its components.

Elements (variables and constants) are adjacent when they occur together in an
atom.  A CQ is *connected* when this graph is; a disconnected CQ is the
conjunction of its connected conjuncts, whose free variables are disjoint.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Section 3.
"""

from __future__ import annotations

import itertools

import networkx as nx

from cqsens.ir.cq import CQ, Term, Var

__all__ = ["gaifman_graph", "components", "is_connected"]


def gaifman_graph(cq: CQ) -> nx.Graph:
    """The Gaifman graph: nodes are the elements, edges join elements of one atom.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> sorted(map(str, gaifman_graph(parse_cq("Q(x) :- R(x, y), S(y, 'c')")).nodes))
    ["'c'", 'x', 'y']
    """
    graph = nx.Graph()
    for atom in cq.sorted_atoms():
        terms = list(dict.fromkeys(atom.terms))
        graph.add_nodes_from(terms)
        graph.add_edges_from(itertools.combinations(terms, 2))
    graph.add_nodes_from(t for t in cq.head if isinstance(t, Var))
    return graph


def _connectivity(cq: CQ) -> nx.Graph:
    """A graph with the Gaifman graph's components: a star per atom instead of a clique.

    Linear in the size of the query, where the Gaifman graph of an atom of
    arity r has r(r-1)/2 edges (two million for a 2,000-column table).
    """
    graph = nx.Graph()
    for atom in cq.sorted_atoms():
        terms = list(dict.fromkeys(atom.terms))
        graph.add_nodes_from(terms)
        graph.add_edges_from((terms[0], t) for t in terms[1:])
    graph.add_nodes_from(t for t in cq.head if isinstance(t, Var))
    return graph


def components(cq: CQ) -> list[CQ]:
    """The connected conjuncts, each with the free variables it holds as head.

    Components are ordered by their first atom in canonical order.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> [str(c) for c in components(parse_cq("Q(x) :- R(x), S(y)"))]
    ['Q(x) :- R(x).', 'Q() :- S(y).']
    """
    graph = _connectivity(cq)
    out: list[CQ] = []
    for nodes in nx.connected_components(graph):
        member: set[Term] = set(nodes)
        atoms = [a for a in cq.sorted_atoms() if set(a.terms) & member]
        head = tuple(v for v in cq.free if v in member)
        out.append(CQ.of(head, atoms, cq.name))
    out.sort(key=lambda c: c.sorted_atoms()[0].sort_key() if c.atoms else ())
    return out


def is_connected(cq: CQ) -> bool:
    """True when the Gaifman graph has at most one component."""
    graph = _connectivity(cq)
    return graph.number_of_nodes() == 0 or bool(nx.is_connected(graph))
