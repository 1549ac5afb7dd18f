"""Plots as geometry: numbers in, shapes out; one Jinja macro (``_chart.html``) draws any of them
as inline SVG.

No plotting library: the report must open offline in one file, render in milliseconds for
thousands of queries, and never put a user string anywhere but an autoescaped text node (labels
and tooltips here are plain ``str``; the template escapes them).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["PALETTE", "Chart", "Series", "bars", "fit", "hbars", "lines", "scatter",
           "series_classes", "sparkline", "time_ticks"]

# Plot area inside the SVG (drawn at this size, never scaled down, so its text keeps the size
# the stylesheet gives it: 12 px); the margins hold tick labels and axis titles. Two charts fit
# side by side in the report's width.
_W, _H = 540, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 16, 14, 44
FONT_PX = 12
_CHAR_PX = 7.2  # the width of an average character at FONT_PX, for spacing tick labels


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    cls: str
    tip: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    cls: str
    tip: str
    # a name written beside the point (``label``), where :func:`_place_labels` found room:
    # its text's start or end (``anchor``) at (``lx``, ``ly``), joined to the point by a thin
    # line when moved off its side (``lead``)
    label: str = ""
    lx: float = 0.0
    ly: float = 0.0
    anchor: str = "start"
    lead: bool = False


@dataclass(frozen=True)
class Path:
    points: str  # "x,y x,y …" (numbers only)
    cls: str


@dataclass(frozen=True)
class Rule:
    """A reference line across the plot (a floor, the K cut-off), labelled."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str


@dataclass(frozen=True)
class Tick:
    pos: float
    label: str


@dataclass(frozen=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    width: int = _W
    height: int = _H
    rects: tuple[Rect, ...] = ()
    paths: tuple[Path, ...] = ()
    dots: tuple[Dot, ...] = ()
    rules: tuple[Rule, ...] = ()
    x_ticks: tuple[Tick, ...] = ()
    y_ticks: tuple[Tick, ...] = ()
    legend: tuple[tuple[str, str], ...] = ()  # (css class, label)
    empty: str = ""  # shown instead of a plot when there is nothing to draw
    left: int = _LEFT
    top: int = _TOP
    plot_w: int = _W - _LEFT - _RIGHT
    plot_h: int = _H - _TOP - _BOTTOM


@dataclass(frozen=True)
class Series:
    """One line or point set: label, x values, y values, a tooltip per point."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    tips: Sequence[str] = field(default_factory=tuple)
    line: bool = True  # joined by a line when the chart draws lines
    cls: str | None = None  # css class; default: the next colour of the palette
    labels: Sequence[str] = field(default_factory=tuple)  # a name beside each point (scatter)


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 5 × 10^k steps)."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    out = [round(start, 12)]
    while out[-1] < hi - step * 1e-9:  # the last tick reaches hi: no point is drawn off the plot
        out.append(round(start + len(out) * step, 12))
    return out


def _thin(labels: Sequence[str], spacing: float) -> int:
    """Show every n-th of ``labels`` (n returned), so that labels ``spacing`` pixels apart do
    not overlap."""
    widest = max((len(lab) for lab in labels), default=0) * _CHAR_PX + 10
    return max(1, math.ceil(widest / spacing)) if spacing > 0 else 1


def fit(label: str, pixels: float) -> str:
    """``label`` cut (with "…") to fit ``pixels`` of width at the plots' font size."""
    room = max(3, int(pixels / _CHAR_PX))
    return label if len(label) <= room else label[:room - 1] + "…"


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _short(v: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= size:
            return f"{v / size:g}{suffix}"
    return f"{v:g}"


class _Scale:
    def __init__(self, lo: float, hi: float, pixels: float, *, flip: bool = False,
                 log: bool = False) -> None:
        self.log = log
        self.lo, self.hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        if self.hi <= self.lo:
            self.hi = self.lo + 1.0
        self.pixels, self.flip = pixels, flip

    def __call__(self, v: float) -> float:
        t = ((math.log10(v) if self.log else v) - self.lo) / (self.hi - self.lo)
        return round((1 - t) * self.pixels if self.flip else t * self.pixels, 2)


def bars(title: str, labels: Sequence[str], stacks: Sequence[tuple[str, Sequence[float]]], *,
         x_label: str = "", y_label: str = "", tips: Sequence[str] = (),
         marker: tuple[int, str] | None = None) -> Chart:
    """Vertical (stacked) bars, one per label; ``stacks`` = [(css class, values)] bottom to top;
    ``marker`` = (bar index, label): a vertical rule before that bar (e.g. the K cut-off)."""
    totals = [sum(s[1][i] for s in stacks) for i in range(len(labels))]
    if not labels or max(totals, default=0) <= 0:
        return Chart(title, x_label, y_label, empty="nothing to plot")
    base = Chart(title, x_label, y_label)
    ticks = _nice_ticks(0, max(totals), 4)
    y = _Scale(0, ticks[-1], base.plot_h, flip=True)
    slot = base.plot_w / len(labels)
    width = max(slot * 0.8, 1.0)
    rects = []
    for i, label in enumerate(labels):
        bottom = 0.0
        for cls, values in stacks:
            v = values[i]
            if v > 0:
                tip = f"{label}: {_fmt(v)}" + (f" — {tips[i]}" if i < len(tips) else "")
                rects.append(Rect(round(i * slot + (slot - width) / 2, 2), y(bottom + v), width,
                                  round(y(bottom) - y(bottom + v), 2), cls, tip))
            bottom += v
    every = _thin(labels, slot)  # keep tick labels from overlapping
    x_ticks = tuple(Tick(round((i + 0.5) * slot, 2), lab) for i, lab in enumerate(labels)
                    if i % every == 0)
    rules: tuple[Rule, ...] = ()
    if marker is not None and 0 < marker[0] < len(labels):
        x = round(marker[0] * slot, 2)
        rules = (Rule(x, 0, x, base.plot_h, marker[1]),)
    return Chart(title, x_label, y_label, rects=tuple(rects), rules=rules, x_ticks=x_ticks,
                 y_ticks=tuple(Tick(y(t), _fmt(t)) for t in ticks))


def hbars(title: str, labels: Sequence[str], values: Sequence[float], *, lo: float = 0.0,
          hi: float = 1.0, x_label: str = "", tips: Sequence[str] = (),
          floor: tuple[float, str] | None = None, bad_below: float | None = None) -> Chart:
    """Horizontal bars (one per label, e.g. a domain) on a fixed [lo, hi] axis, with an optional
    vertical ``floor`` rule; bars under ``bad_below`` are drawn as failing."""
    if not labels:
        return Chart(title, x_label, "", empty="no domains in this run")
    row = 22
    plot_h = row * len(labels)
    left = 150
    plot_w = _W - left - _RIGHT
    x = _Scale(lo, hi, plot_w)
    rects = tuple(
        Rect(0, i * row + 3, max(x(min(max(v, lo), hi)), 1.0), row - 6,
             "bad" if bad_below is not None and v < bad_below else "good",
             f"{lab}: {_fmt(v)}" + (f" — {tips[i]}" if i < len(tips) else ""))
        for i, (lab, v) in enumerate(zip(labels, values))
    )
    rules = () if floor is None else (Rule(x(floor[0]), 0, x(floor[0]), plot_h, floor[1]),)
    return Chart(title, x_label, "", height=plot_h + _TOP + _BOTTOM, rects=rects, rules=rules,
                 x_ticks=tuple(Tick(x(t), _fmt(t)) for t in _nice_ticks(lo, hi, 5)),
                 y_ticks=tuple(Tick(i * row + row / 2, fit(lab, left - 10))
                               for i, lab in enumerate(labels)),
                 left=left, plot_w=plot_w, plot_h=plot_h)


# The palette (css classes c0…c11 of report.css, told apart also by people who see colours
# less well), and the patterns that tell series apart beyond it (dashed, then dotted lines).
PALETTE = 12
_PATTERNS = ("", " alt1", " alt2")


def series_classes(series: Sequence[Series]) -> list[str]:
    """The css class of each series: its own when it names one, else the next palette colour
    no series of the chart names; past the palette's twelve, the colours again with a dashed
    (then dotted) line, so no two series of a chart look alike (up to 36 of them)."""
    named = {s.cls for s in series if s.cls}
    free = [f"c{i}" for i in range(PALETTE) if f"c{i}" not in named] or ["c0"]
    out, k = [], 0
    for s in series:
        if s.cls:
            out.append(s.cls)
            continue
        out.append(free[k % len(free)] + _PATTERNS[min(k // len(free), len(_PATTERNS) - 1)])
        k += 1
    return out


def time_ticks(times: Sequence[str]) -> list[tuple[float, str]]:
    """An x tick per run, at 0, 1, 2…, from its ISO time (``2025-11-30T17:10:42+00:00``):
    "11-30 17:10", with the seconds where two runs share a minute ("11-30 17:10:42"), and a
    number where they share a second too ("11-30 17:10:42 #2"): no two runs share a label."""
    minute = [t[5:16].replace("T", " ") for t in times]
    crowded = {m for m, n in Counter(minute).items() if n > 1}
    labels = [t[5:19].replace("T", " ") if m in crowded else m for t, m in zip(times, minute)]
    seen: Counter[str] = Counter()
    out = []
    for i, label in enumerate(labels):
        seen[label] += 1
        out.append((float(i), label if seen[label] == 1 else f"{label} #{seen[label]}"))
    return out


def _xy_chart(title: str, series: Sequence[Series], *, x_label: str, y_label: str,
              x_ticks: Sequence[tuple[float, str]] | None, log_x: bool, draw_lines: bool,
              y_range: tuple[float, float] | None,
              floor: tuple[float, str] | None) -> Chart:
    xs = [v for s in series for v in s.x if math.isfinite(v) and (v > 0 or not log_x)]
    ys = [v for s in series for v in s.y if math.isfinite(v)]
    if not xs or not ys:
        return Chart(title, x_label, y_label, empty="nothing recorded yet")
    base = Chart(title, x_label, y_label)
    lo_y, hi_y = y_range if y_range is not None else (min(ys), max(ys))
    if floor is not None:
        lo_y, hi_y = min(lo_y, floor[0]), max(hi_y, floor[0])
    if hi_y - lo_y < 1e-12:
        lo_y, hi_y = lo_y - (abs(lo_y) * 0.05 or 1.0), hi_y + (abs(hi_y) * 0.05 or 1.0)
    yt = _nice_ticks(lo_y, hi_y, 4)
    y = _Scale(yt[0], yt[-1], base.plot_h, flip=True)
    lo_x, hi_x = min(xs), max(xs)
    if log_x:
        lo_x, hi_x = 10 ** math.floor(math.log10(lo_x)), 10 ** math.ceil(math.log10(hi_x))
        xt = [(10.0 ** e, _short(10.0 ** e))
              for e in range(round(math.log10(lo_x)), round(math.log10(hi_x)) + 1)]
    elif x_ticks is None:
        xt = [(t, _fmt(t)) for t in _nice_ticks(lo_x, hi_x, 6)]
        lo_x, hi_x = xt[0][0], xt[-1][0]
    else:
        lo_x, hi_x = (lo_x - 0.5, hi_x + 0.5)
        spacing = base.plot_w / max(1.0, hi_x - lo_x)  # pixels between two neighbouring x
        every = _thin([lab for _, lab in x_ticks], spacing)
        xt = [t for i, t in enumerate(x_ticks) if i % every == 0]
    x = _Scale(lo_x, hi_x, base.plot_w, log=log_x)
    paths, dots = [], []
    classes = series_classes(series)
    for s, cls in zip(series, classes):
        pts = [(x(a), y(b)) for a, b in zip(s.x, s.y)
               if math.isfinite(a) and math.isfinite(b) and (a > 0 or not log_x)]
        if draw_lines and s.line and len(pts) > 1:
            paths.append(Path(" ".join(f"{a},{b}" for a, b in pts), cls))
        tips = list(s.tips) + [""] * (len(s.x) - len(s.tips))
        names = list(s.labels) + [""] * (len(s.x) - len(s.labels))
        dots += [Dot(px, py, cls, f"{s.label}: {tip or _fmt(b)}", name)
                 for (px, py), tip, b, name in zip(pts, tips, s.y, names)]
    if any(d.label for d in dots):
        dots = _place_labels(dots, base.plot_w, base.plot_h)
    rules = () if floor is None else (Rule(0, y(floor[0]), base.plot_w, y(floor[0]), floor[1]),)
    return Chart(title, x_label, y_label, paths=tuple(paths), dots=tuple(dots), rules=rules,
                 x_ticks=tuple(Tick(x(v), lab) for v, lab in xt if lo_x <= v <= hi_x),
                 y_ticks=tuple(Tick(y(t), _fmt(t)) for t in yt),
                 legend=tuple(zip(classes, (s.label for s in series)))
                 if len(series) > 1 else ())


# A point's name is cut to this many pixels; its full text is the point's tooltip.
_LABEL_PX = 150
_LABEL_H = FONT_PX + 2  # a label's line height


def _place_labels(dots: Sequence[Dot], plot_w: float, plot_h: float) -> list[Dot]:
    """Each labelled dot with its name placed where it covers no other name and no other point:
    right of the point, else left, else up to six lines further down or up (joined to it by a
    leader), top to bottom; inside the plot area. The first place tried is kept when none is
    free."""
    Box = tuple[float, float, float, float]
    taken: list[Box] = [(d.x - 4, d.y - 4, d.x + 4, d.y + 4) for d in dots]

    def free(box: Box, own: Box) -> bool:
        x0, y0, x1, y1 = box
        # the margins above and right of the plot hold a name too (not the axes' side)
        inside = x0 >= 0 and x1 <= plot_w + _RIGHT and y0 >= -_TOP and y1 <= plot_h
        return inside and not any(t is not own and x0 < t[2] and t[0] < x1 and y0 < t[3]
                                  and t[1] < y1 for t in taken)

    out = list(dots)
    for i in sorted(range(len(dots)), key=lambda i: (dots[i].y, dots[i].x)):
        d = dots[i]
        if not d.label:
            continue
        text = fit(d.label, _LABEL_PX)
        width = len(text) * _CHAR_PX
        own = taken[i]
        # beside the point first, then a line further down or up, up to six lines away: points
        # placed by measured latency can crowd any part of the plot
        shifts = [0, *(sign * n for n in range(1, 7) for sign in (1, -1))]
        tries = [(side, shift * _LABEL_H) for shift in shifts for side in ("start", "end")]
        chosen = tries[0]
        for side, dy in tries:
            x0 = d.x + 6 if side == "start" else d.x - 6 - width
            if free((x0, d.y + dy - _LABEL_H / 2, x0 + width, d.y + dy + _LABEL_H / 2), own):
                chosen = (side, dy)
                break
        side, dy = chosen
        x0 = d.x + 6 if side == "start" else d.x - 6 - width
        taken.append((x0, d.y + dy - _LABEL_H / 2, x0 + width, d.y + dy + _LABEL_H / 2))
        out[i] = Dot(d.x, d.y, d.cls, d.tip, text, round(d.x + 6 if side == "start"
                                                          else d.x - 6, 2),
                     round(d.y + dy + 4, 2), side, dy != 0)
    return out


def lines(title: str, series: Sequence[Series], *, x_label: str = "", y_label: str = "",
          x_ticks: Sequence[tuple[float, str]] | None = None,
          y_range: tuple[float, float] | None = None,
          floor: tuple[float, str] | None = None) -> Chart:
    """Lines over x (e.g. run order, with ``x_ticks`` naming the runs)."""
    return _xy_chart(title, series, x_label=x_label, y_label=y_label, x_ticks=x_ticks,
                     log_x=False, draw_lines=True, y_range=y_range, floor=floor)


def scatter(title: str, series: Sequence[Series], *, x_label: str = "", y_label: str = "",
            log_x: bool = False, connect: bool = False,
            y_range: tuple[float, float] | None = None) -> Chart:
    """Points per series (``connect`` draws each series' points joined in the given order)."""
    return _xy_chart(title, series, x_label=x_label, y_label=y_label, x_ticks=None,
                     log_x=log_x, draw_lines=connect, y_range=y_range, floor=None)


def sparkline(title: str, values: Sequence[float], tips: Sequence[str] = (), *,
              limit: float | None = None, width: int = 160, height: int = 36) -> Chart:
    """A trend small enough for a card: the values in order, no axes; ``limit`` (a threshold)
    drawn as a rule. ``_chart.html``'s ``spark`` macro draws it."""
    ys = [v for v in values if math.isfinite(v)]
    if not ys:
        return Chart(title, "", "", width=width, height=height, empty="no trend yet")
    lo, hi = min(ys), max(ys)
    if limit is not None and math.isfinite(limit):
        lo, hi = min(lo, limit), max(hi, limit)
    if hi - lo < 1e-12:
        lo, hi = lo - (abs(lo) * 0.05 or 1.0), hi + (abs(hi) * 0.05 or 1.0)
    pad = 3
    plot_w, plot_h = width - 2 * pad, height - 2 * pad
    x = _Scale(0.0, float(max(1, len(values) - 1)), plot_w)
    y = _Scale(lo, hi, plot_h, flip=True)
    pts = [(x(float(i)), y(v)) for i, v in enumerate(values) if math.isfinite(v)]
    tips = list(tips) + [""] * (len(values) - len(tips))
    dots = tuple(Dot(px, py, "c0", tip or _fmt(v)) for (px, py), tip, v in
                 zip(pts, tips, [v for v in values if math.isfinite(v)]))
    paths = (Path(" ".join(f"{a},{b}" for a, b in pts), "c0"),) if len(pts) > 1 else ()
    rules = () if limit is None or not math.isfinite(limit) else (
        Rule(0, y(limit), plot_w, y(limit), ""),)
    return Chart(title, "", "", width=width, height=height, paths=paths, dots=dots[-1:],
                 rules=rules, left=pad, top=pad, plot_w=plot_w, plot_h=plot_h)
