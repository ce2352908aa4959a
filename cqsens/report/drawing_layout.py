"""The geometry of a drawing of a query's canonical structure (:mod:`cqsens.report.drawing`):
the atoms and steps read off the ``structure`` object, the spring layout of its elements and
atom boxes in pixels, pushed apart so that labels do not overlap, the sizes of boxes, the
sides of labels and the curves of parallel arrows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from cqsens.ir.exact import exact, text

__all__ = ["CHAR_W", "LABEL_SIDES", "NODE_R", "SEED", "Atom", "Step", "box_extra", "box_size",
           "clip", "curve", "fmt", "label_side", "layout", "pair", "place", "read_structure",
           "separate", "text_width"]

NODE_R = 9.0  # half-size of an element's shape
CHAR_W = 6.6  # rough width of one character at 12px
SEED = 7


@dataclass
class Atom:
    index: int
    relation: str
    text: str
    terms: list[str]
    filter: bool
    bound: Any
    unbounded: bool
    missing: list[str] = field(default_factory=list)

    @property
    def as_arrow(self) -> bool:
        """Binary atoms over two distinct elements are drawn as arrows."""
        return not self.filter and len(self.terms) == 2 and self.terms[0] != self.terms[1]

    @property
    def label(self) -> str:
        if self.filter:
            inner = self.text.strip()
            if inner.startswith("[") and inner.endswith("]"):
                inner = inner[1:-1]
            return inner
        return self.relation


@dataclass
class Step:
    relation: str
    source: str
    target: str
    weight: Any
    atoms: list[str]


def fmt(value: Any) -> str:
    if value is None:
        return "?"
    if value == "inf" or value == math.inf:
        return "∞"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return text(exact(value))
    return str(value)


def text_width(text: str, size: float = 12.0) -> float:
    return len(text) * CHAR_W * size / 12.0


def read_structure(structure: Mapping[str, Any]) -> tuple[dict[str, str], list[Atom], list[Step]]:
    """Elements (name -> kind), atoms and de-duplicated steps of ``structure``."""
    kinds: dict[str, str] = {}
    for el in structure.get("elements") or []:
        kinds[str(el["name"])] = str(el.get("kind", "existential"))
    unbounded: dict[str, list[str]] = {}
    for entry in structure.get("unbounded") or []:
        missing = [str(v) for v in entry.get("missing", [])]
        unbounded.setdefault(str(entry["atom"]), []).extend(missing)
    atoms: list[Atom] = []
    for i, a in enumerate(structure.get("atoms") or []):
        terms = [str(t) for t in a.get("terms", [])]
        for t in terms:
            kinds.setdefault(t, "existential")
        text = str(a.get("text", a.get("relation", "")))
        atoms.append(Atom(
            index=i,
            relation=str(a.get("relation", "")),
            text=text,
            terms=terms,
            filter=bool(a.get("filter", False)),
            bound=a.get("bound"),
            unbounded=text in unbounded,
            missing=unbounded.get(text, []),
        ))
    steps: dict[tuple[str, str, str, str], Step] = {}
    for s in structure.get("steps") or []:
        source, target = str(s["from"]), str(s["to"])
        if source == target or source not in kinds or target not in kinds:
            continue
        key = (str(s["relation"]), source, target, fmt(s.get("weight")))
        step = steps.setdefault(key, Step(key[0], source, target, s.get("weight"), []))
        if s.get("atom") is not None and str(s["atom"]) not in step.atoms:
            step.atoms.append(str(s["atom"]))
    return kinds, atoms, list(steps.values())


def layout(kinds: Mapping[str, str], atoms: Sequence[Atom]) -> dict[str, tuple[float, float]]:
    """Spring-layout coordinates in [0, 1]² for elements and atom boxes (``#i``)."""
    graph = nx.Graph()
    graph.add_nodes_from(kinds)
    for atom in atoms:
        if atom.as_arrow:
            graph.add_edge(atom.terms[0], atom.terms[1])
        else:
            box = f"#{atom.index}"
            graph.add_node(box)
            graph.add_edges_from((box, t) for t in dict.fromkeys(atom.terms))
    if graph.number_of_nodes() == 0:
        return {}
    if graph.number_of_nodes() == 1:
        return {next(iter(graph.nodes)): (0.5, 0.5)}
    k = 2.0 / math.sqrt(graph.number_of_nodes())
    raw = nx.spring_layout(graph, seed=SEED, k=k, iterations=200)
    xs = [float(p[0]) for p in raw.values()]
    ys = [float(p[1]) for p in raw.values()]

    def unit(v: float, lo: float, hi: float) -> float:
        return 0.5 if hi - lo < 1e-9 else (v - lo) / (hi - lo)

    return {
        str(node): (unit(float(p[0]), min(xs), max(xs)), unit(float(p[1]), min(ys), max(ys)))
        for node, p in raw.items()
    }


def box_extra(atom: Atom) -> str:
    """The small text after an atom's label: its bound (none for filters)."""
    return "" if atom.filter else f"Δ{fmt(atom.bound)}"


def box_size(atom: Atom) -> tuple[float, float]:
    """Half-width and half-height of an atom's box."""
    extra = box_extra(atom)
    text_w = text_width(atom.label, 11.0) + (text_width(" " + extra, 9.0) if extra else 0.0)
    return text_w / 2 + 6, 9.0


def separate(
    pos: dict[str, tuple[float, float]],
    min_dist: float,
    box: tuple[float, float, float, float],
    rounds: int = 40,
) -> dict[str, tuple[float, float]]:
    """Push apart nodes closer than ``min_dist`` pixels, keeping them inside ``box``.

    A few deterministic relaxation rounds over the layout's coordinates, so that
    labels of nearby nodes do not overlap.
    """
    x0, y0, x1, y1 = box
    names = sorted(pos)
    cur = {n: [pos[n][0], pos[n][1]] for n in names}
    for _ in range(rounds):
        moved = False
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                dx, dy = cur[b][0] - cur[a][0], cur[b][1] - cur[a][1]
                dist = math.hypot(dx, dy)
                if dist >= min_dist:
                    continue
                moved = True
                if dist < 1e-6:
                    dx, dy, dist = 1.0, 0.0, 1.0
                push = (min_dist - dist) / 2
                ux, uy = dx / dist, dy / dist
                cur[a][0] -= ux * push
                cur[a][1] -= uy * push
                cur[b][0] += ux * push
                cur[b][1] += uy * push
        for p in cur.values():
            p[0] = min(max(p[0], x0), x1)
            p[1] = min(max(p[1], y0), y1)
        if not moved:
            break
    return {n: (cur[n][0], cur[n][1]) for n in names}


def clip(
    center: tuple[float, float], toward: tuple[float, float], half: tuple[float, float]
) -> tuple[float, float]:
    """Where the segment from ``center`` to ``toward`` leaves a box of half-size ``half``."""
    dx, dy = toward[0] - center[0], toward[1] - center[1]
    if abs(dx) < 1e-9 and abs(dy) < 1e-9:
        return center
    t = min(
        half[0] / abs(dx) if abs(dx) > 1e-9 else math.inf,
        half[1] / abs(dy) if abs(dy) > 1e-9 else math.inf,
    )
    t = min(t, 1.0)
    return center[0] + dx * t, center[1] + dy * t


LABEL_SIDES: tuple[tuple[tuple[float, float], tuple[float, float], str], ...] = (
    ((0.0, 1.0), (0.0, NODE_R + 10), "middle"),
    ((0.0, -1.0), (0.0, -NODE_R - 9), "middle"),
    ((1.0, 0.0), (NODE_R + 5, 0.0), "start"),
    ((-1.0, 0.0), (-NODE_R - 5, 0.0), "end"),
)


def label_side(
    at: tuple[float, float],
    others: Sequence[tuple[float, float]],
    text_w: float,
    canvas: tuple[float, float],
) -> tuple[tuple[float, float], str]:
    """Offset and anchor of an element's name: the side most clear of its lines.

    Sides where the name would leave the ``canvas`` (width, height) are skipped.
    """
    directions = []
    for ox, oy in others:
        d = math.hypot(ox - at[0], oy - at[1])
        if d > 1e-6:
            directions.append(((ox - at[0]) / d, (oy - at[1]) / d))
    best = LABEL_SIDES[0]
    best_score = math.inf
    for side in LABEL_SIDES:
        (sx, sy), (dx, dy), anchor = side
        left = at[0] + dx - (text_w / 2 if anchor == "middle" else text_w if anchor == "end" else 0)
        if left < 2 or left + text_w > canvas[0] - 2 or not 8 < at[1] + dy < canvas[1] - 8:
            continue
        score = max((sx * ux + sy * uy for ux, uy in directions), default=-1.0)
        if score < best_score - 0.05:
            best, best_score = side, score
    return best[1], best[2]


def pair(a: str, b: str) -> tuple[str, str]:
    """The two ends of an arrow in a fixed order, whatever its direction."""
    return (a, b) if a <= b else (b, a)


def curve(
    a: tuple[float, float], b: tuple[float, float], offset: float
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float], tuple[float, float]]:
    """Start, control point, end and apex of a quadratic curve from a to b bent by ``offset``.

    Endpoints are moved off the element shapes; ``offset`` is signed with
    respect to the direction from ``a`` to ``b``.
    """
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    nx_, ny_ = -uy, ux
    mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    control = (mid[0] + nx_ * offset * 2, mid[1] + ny_ * offset * 2)
    gap = NODE_R + 4

    def moved(p: tuple[float, float]) -> tuple[float, float]:
        vx, vy = control[0] - p[0], control[1] - p[1]
        v = math.hypot(vx, vy) or 1.0
        return p[0] + vx / v * gap, p[1] + vy / v * gap

    start, end = moved(a), moved(b)
    apex = (
        0.25 * start[0] + 0.5 * control[0] + 0.25 * end[0],
        0.25 * start[1] + 0.5 * control[1] + 0.25 * end[1],
    )
    return start, control, end, apex


def place(
    kinds: Mapping[str, str], atoms: Sequence[Atom], width: int, area_h: float
) -> dict[str, tuple[float, float]]:
    """Pixel coordinates of elements and atom boxes, with margins for their labels."""
    label_room = max(
        [text_width(n) / 2 for n in kinds]
        + [box_size(a)[0] for a in atoms if not a.as_arrow]
        + [20.0]
    )
    mx = min(max(label_room + 10, 36.0), width / 3)
    my = 30.0
    unit = layout(kinds, atoms)
    pos = {
        node: (mx + u * (width - 2 * mx), my + v * (area_h - 2 * my))
        for node, (u, v) in unit.items()
    }
    return separate(pos, 88.0, (mx, my, width - mx, area_h - my))
