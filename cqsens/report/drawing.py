"""Drawings of a query's canonical structure as inline SVG.

The canonical structure C_Q of a conjunctive query has one element per
variable or constant and one tuple per atom (Arapinis, Figueira, Gaboardi,
ICALP 2016, Section 3).  :func:`draw_structure` draws it the way the paper's
figures do: free variables as squares, constants as diamonds, existential
variables as circles.  A binary atom is an arrow from its first to its second
term, labelled with the relation; any other atom (and every filter) is a small
labelled box joined to its terms, with the term positions written on the
joins.  Filters are dashed.  The steps of dependencies behind finite bounds are
green arrows labelled ``R ×k``; atoms with an unbounded sensitivity, and the
free variables they cannot reach, are red.

The input is the ``structure`` object of
:meth:`cqsens.pipeline.Analysis.to_dict`.  Coordinates come from a networkx
spring layout started from a fixed random state (:mod:`cqsens.report.drawing_layout`),
so the same input always gives the same SVG text.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Sections 3-5.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cqsens.report.drawing_layout import (
    NODE_R,
    Atom,
    Step,
    box_extra,
    box_size,
    clip,
    curve,
    fmt,
    label_side,
    pair,
    place,
    read_structure,
    text_width,
)

__all__ = ["draw_structure"]

#: Colours of the drawing (also used by the HTML report's legend).
COLORS: dict[str, str] = {
    "free": "#1d4ed8",
    "constant": "#b45309",
    "existential": "#334155",
    "atom": "#475569",
    "filter": "#64748b",
    "step": "#047857",
    "unbounded": "#dc2626",
}

_FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
_LEGEND_H = 26.0


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(x: float) -> str:
    """A coordinate, rounded for stable text output."""
    out = f"{x:.1f}"
    return "0.0" if out == "-0.0" else out


def _arrowhead(tip: tuple[float, float], direction: tuple[float, float], color: str) -> str:
    dx, dy = direction
    norm = math.hypot(dx, dy) or 1.0
    ux, uy = dx / norm, dy / norm
    size, spread = 9.0, 4.5
    bx, by = tip[0] - ux * size, tip[1] - uy * size
    pts = [tip, (bx - uy * spread, by + ux * spread), (bx + uy * spread, by - ux * spread)]
    return f'<polygon points="{" ".join(f"{_n(x)},{_n(y)}" for x, y in pts)}" fill="{color}"/>'


def _label(
    x: float,
    y: float,
    text: str,
    *,
    color: str,
    size: float = 12.0,
    weight: str = "normal",
    extra: str = "",
    css: str = "label",
    anchor: str = "middle",
) -> str:
    suffix = (
        f'<tspan font-size="{_n(size - 2)}" fill="#64748b"> {_e(extra)}</tspan>' if extra else ""
    )
    return (
        f'<text class="{css}" x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" '
        f'dominant-baseline="central" font-size="{_n(size)}" font-weight="{weight}" '
        f'fill="{color}" stroke="#ffffff" stroke-width="4" stroke-linejoin="round" '
        f'paint-order="stroke">{_e(text)}{suffix}</text>'
    )


#: Where an element's name may go: offset from the element and text anchor.


def _shape(kind: str, x: float, y: float, *, missing: bool, title: str) -> str:
    r = NODE_R
    stroke = COLORS["unbounded"] if missing else COLORS.get(kind, COLORS["existential"])
    width = "3" if missing else "1.6"
    tip = f"<title>{_e(title)}</title>"
    if kind == "free":
        fill = "#dbeafe"
        return (
            f'<rect class="element free" x="{_n(x - r)}" y="{_n(y - r)}" width="{_n(2 * r)}" '
            f'height="{_n(2 * r)}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{width}">{tip}</rect>'
        )
    if kind == "constant":
        d = r * 1.3
        pts = f"{_n(x)},{_n(y - d)} {_n(x + d)},{_n(y)} {_n(x)},{_n(y + d)} {_n(x - d)},{_n(y)}"
        return (
            f'<polygon class="element constant" points="{pts}" fill="#fef3c7" '
            f'stroke="{stroke}" stroke-width="{width}">{tip}</polygon>'
        )
    return (
        f'<circle class="element existential" cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" '
        f'fill="#ffffff" stroke="{stroke}" stroke-width="{width}">{tip}</circle>'
    )


@dataclass(frozen=True)
class _Arrow:
    """A drawn arrow between two elements: a binary atom or a step."""

    source: str
    target: str
    color: str
    css: str
    tip: str
    label: str
    extra: str = ""
    stroke_width: str = "1.6"
    weight: str = "normal"


def _atom_arrow(atom: Atom) -> _Arrow:
    return _Arrow(
        source=atom.terms[0],
        target=atom.terms[1],
        color=COLORS["unbounded"] if atom.unbounded else COLORS["atom"],
        css="atom unbounded" if atom.unbounded else "atom",
        tip=f"{atom.text}: one row changes the count by at most {fmt(atom.bound)}",
        label=atom.label,
        extra=f"Δ{fmt(atom.bound)}",
    )


def _step_arrow(step: Step) -> _Arrow:
    behind = f" behind the bound of {', '.join(step.atoms)}" if step.atoms else ""
    return _Arrow(
        source=step.source,
        target=step.target,
        color=COLORS["step"],
        css="step",
        tip=f"step {step.source} -> {step.target} via {step.relation} "
            f"(×{fmt(step.weight)}){behind}",
        label=f"{step.relation} ×{fmt(step.weight)}",
        stroke_width="2.6",
        weight="600",
    )


def draw_structure(
    structure: Mapping[str, Any],
    *,
    width: int = 560,
    height: int = 340,
    legend: bool = True,
    title: str | None = None,
) -> str:
    """An inline SVG drawing of a query's canonical structure.

    Parameters
    ----------
    structure : mapping
        The ``structure`` object of an analysis (``Analysis.to_dict()["structure"]``):
        ``elements`` (name, kind), ``atoms`` (relation, text, terms, filter,
        bound), ``steps`` (atom, relation, from, to, weight) and ``unbounded``
        (atom, missing).
    width, height : int, optional
        Size of the drawing in pixels (the legend included).
    legend : bool, optional
        Draw a one-line legend of the shapes and colours at the bottom.
    title : str, optional
        Accessible title of the drawing (default: a list of the atoms).

    Returns
    -------
    str
        One ``<svg class="drawing">`` element with no external resources; all
        text is HTML-escaped.  The same input gives the same text.

    Raises
    ------
    ValueError
        When ``width`` or ``height`` is too small to draw in.

    Examples
    --------
    >>> svg = draw_structure({
    ...     "elements": [{"name": "x", "kind": "free"}, {"name": "y", "kind": "existential"}],
    ...     "atoms": [{"relation": "R", "text": "R(x, y)", "terms": ["x", "y"],
    ...                "filter": False, "bound": 1, "counted": True}],
    ...     "steps": [], "unbounded": []})
    >>> svg.startswith('<svg class="drawing"'), svg.count('class="element')
    (True, 2)
    """
    if width < 120 or height < 80:
        raise ValueError(f"drawing too small: {width}x{height} (need at least 120x80)")
    kinds, atoms, steps = read_structure(structure)
    area_h = height - (_LEGEND_H if legend else 0.0)
    pos = place(kinds, atoms, width, area_h)
    heading = title if title is not None else "; ".join(a.text for a in atoms) or "empty structure"
    out = [
        f'<svg class="drawing" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'font-family="{_e(_FONT)}">',
        f"<title>{_e(heading)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    if not kinds:
        out.append(_label(width / 2, area_h / 2, "(no elements)", color="#64748b"))
    edges, labels = _draw_arrows(atoms, steps, pos)
    boxes: list[str] = []
    for atom in atoms:
        if not atom.as_arrow:
            box, box_labels = _draw_box(atom, pos)
            boxes.append(box)
            labels.extend(box_labels)
    nodes, node_labels = _draw_elements(kinds, atoms, steps, pos, (width, area_h))
    labels.extend(node_labels)
    out.extend(edges)
    out.extend(boxes)
    out.extend(nodes)
    out.extend(labels)
    if legend:
        out.append(_legend(width, height))
    out.append("</svg>")
    return "\n".join(out)


def _draw_arrows(
    atoms: Sequence[Atom], steps: Sequence[Step], pos: Mapping[str, tuple[float, float]]
) -> tuple[list[str], list[str]]:
    """Arrows between two elements (binary atoms and steps), bent apart when parallel.

    Returns the arrows and their labels, drawn later on top of everything.
    """
    lanes: dict[tuple[str, str], list[_Arrow]] = {}
    for arrow in [_atom_arrow(a) for a in atoms if a.as_arrow] + [_step_arrow(t) for t in steps]:
        lanes.setdefault(pair(arrow.source, arrow.target), []).append(arrow)
    edges: list[str] = []
    labels: list[str] = []
    for (first, _), arrows in lanes.items():
        for i, arrow in enumerate(arrows):
            offset = (i - (len(arrows) - 1) / 2) * 30.0
            # offsets are measured on the pair's fixed direction
            signed = offset if arrow.source == first else -offset
            start, control, end, apex = curve(pos[arrow.source], pos[arrow.target], signed)
            edges.append(
                f'<g class="{arrow.css}"><title>{_e(arrow.tip)}</title>'
                f'<path d="M {_n(start[0])} {_n(start[1])} Q {_n(control[0])} {_n(control[1])} '
                f'{_n(end[0])} {_n(end[1])}" fill="none" stroke="{arrow.color}" '
                f'stroke-width="{arrow.stroke_width}"/>'
                + _arrowhead(end, (end[0] - control[0], end[1] - control[1]), arrow.color)
                + "</g>"
            )
            labels.append(_label(apex[0], apex[1], arrow.label, color=arrow.color, size=11.5,
                                 weight=arrow.weight, extra=arrow.extra))
    return edges, labels


def _draw_box(atom: Atom, pos: Mapping[str, tuple[float, float]]) -> tuple[str, list[str]]:
    """The box of a non-binary atom or filter, joined to its terms, and its labels."""
    bx, by = pos[f"#{atom.index}"]
    half = box_size(atom)
    color = (
        COLORS["unbounded"] if atom.unbounded else COLORS["filter"] if atom.filter
        else COLORS["atom"]
    )
    dash = ' stroke-dasharray="5 4"' if atom.filter else ""
    css = "atom filter" if atom.filter else "atom unbounded" if atom.unbounded else "atom"
    tip = (
        f"filter {atom.text}" if atom.filter
        else f"{atom.text}: one row changes the count by at most {fmt(atom.bound)}"
    )
    positions: dict[str, list[int]] = {}
    for i, term in enumerate(atom.terms, start=1):
        positions.setdefault(term, []).append(i)
    labels: list[str] = []
    parts = [f'<g class="{css}"><title>{_e(tip)}</title>']
    for term, where in positions.items():
        tx, ty = pos[term]
        start = clip((bx, by), (tx, ty), half)
        dist = math.hypot(tx - bx, ty - by) or 1.0
        end = (tx - (tx - bx) / dist * (NODE_R + 3), ty - (ty - by) / dist * (NODE_R + 3))
        parts.append(
            f'<line x1="{_n(start[0])}" y1="{_n(start[1])}" x2="{_n(end[0])}" '
            f'y2="{_n(end[1])}" stroke="{color}" stroke-width="1.4"{dash}/>'
        )
        if not atom.filter and len(atom.terms) > 1:
            px, py = start[0] + (end[0] - start[0]) * 0.3, start[1] + (end[1] - start[1]) * 0.3
            labels.append(_label(px, py, ",".join(map(str, where)), color=color, size=9.5,
                                 css="position"))
    parts.append(
        f'<rect x="{_n(bx - half[0])}" y="{_n(by - half[1])}" width="{_n(2 * half[0])}" '
        f'height="{_n(2 * half[1])}" rx="4" fill="{"#f8fafc" if atom.filter else "#f1f5f9"}" '
        f'stroke="{color}" stroke-width="1.4"{dash}/>'
    )
    parts.append("</g>")
    labels.append(_label(bx, by, atom.label, color=color, size=11, extra=box_extra(atom),
                         css="atom-label"))
    return "".join(parts), labels


def _neighbours(atoms: Sequence[Atom], steps: Sequence[Step]) -> dict[str, list[str]]:
    """For each element, the nodes it is drawn joined to (elements and atom boxes)."""
    neighbours: dict[str, list[str]] = {}
    for atom in atoms:
        ends = atom.terms if atom.as_arrow else [f"#{atom.index}"] + atom.terms
        for t in atom.terms:
            neighbours.setdefault(t, []).extend(e for e in ends if e != t)
    for step in steps:
        neighbours.setdefault(step.source, []).append(step.target)
        neighbours.setdefault(step.target, []).append(step.source)
    return neighbours


def _draw_elements(
    kinds: Mapping[str, str],
    atoms: Sequence[Atom],
    steps: Sequence[Step],
    pos: Mapping[str, tuple[float, float]],
    canvas: tuple[float, float],
) -> tuple[list[str], list[str]]:
    """The shapes of the elements and their names, each name on its clearest side."""
    missing = {v for a in atoms for v in a.missing}
    neighbours = _neighbours(atoms, steps)
    nodes: list[str] = []
    labels: list[str] = []
    for name, kind in kinds.items():
        x, y = pos[name]
        is_missing = name in missing
        tip = f"{name}: {kind}" + (" (unreachable from an unbounded atom)" if is_missing else "")
        nodes.append(_shape(kind, x, y, missing=is_missing, title=tip))
        color = COLORS["unbounded"] if is_missing else "#0f172a"
        (dx, dy), anchor = label_side(
            pos[name], [pos[m] for m in neighbours.get(name, [])], text_width(name), canvas,
        )
        labels.append(_label(x + dx, y + dy, name, color=color, anchor=anchor,
                             weight="600" if kind == "free" else "normal"))
    return nodes, labels


def _legend(width: int, height: int) -> str:
    """One line explaining shapes and colours, at the bottom of the drawing."""
    y = height - _LEGEND_H / 2
    r, d, size = 5.0, 6.5, 10.5
    parts = [
        f'<g class="legend" font-size="{size}" fill="#334155">'
        f'<line x1="0" y1="{_n(height - _LEGEND_H)}" x2="{width}" y2="{_n(height - _LEGEND_H)}" '
        f'stroke="#e2e8f0"/>'
    ]
    x = 8.0

    def text(label: str, at: float, color: str = "#334155") -> float:
        parts.append(f'<text x="{_n(at)}" y="{_n(y)}" dominant-baseline="central" '
                     f'fill="{color}">{_e(label)}</text>')
        return at + text_width(label, size) + 12

    parts.append(f'<rect x="{_n(x)}" y="{_n(y - r)}" width="{_n(2 * r)}" height="{_n(2 * r)}" '
                 f'fill="#dbeafe" stroke="{COLORS["free"]}"/>')
    x = text("free", x + 2 * r + 4)
    parts.append(
        f'<polygon points="{_n(x + d)},{_n(y - d)} {_n(x + 2 * d)},{_n(y)} {_n(x + d)},{_n(y + d)} '
        f'{_n(x)},{_n(y)}" fill="#fef3c7" stroke="{COLORS["constant"]}"/>'
    )
    x = text("constant", x + 2 * d + 4)
    parts.append(f'<circle cx="{_n(x + r)}" cy="{_n(y)}" r="{_n(r)}" fill="#ffffff" '
                 f'stroke="{COLORS["existential"]}"/>')
    x = text("existential", x + 2 * r + 4)
    for label, color, extra in (
        ("step ×k", COLORS["step"], ' stroke-width="2.4"'),
        ("unbounded", COLORS["unbounded"], ' stroke-width="1.6"'),
        ("filter", COLORS["filter"], ' stroke-width="1.6" stroke-dasharray="4 3"'),
        ("Δ: atom bound", "#64748b", ""),
    ):
        if x + 22 + text_width(label, size) > width:
            break
        if extra:
            parts.append(f'<line x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x + 18)}" y2="{_n(y)}" '
                         f'stroke="{color}"{extra}/>')
            x += 22
        x = text(label, x, color)
    parts.append("</g>")
    return "".join(parts)
