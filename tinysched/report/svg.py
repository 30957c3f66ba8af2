"""Inline SVG charts for the report: memory timeline, arena map, fill bars. No scripts, no network,
readable in print; every name from the model is escaped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tinysched.report.format import esc

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
    "#edc948", "#9c755f", "#bab0ac", "#86bcb6", "#d4a6c8",
)  # fmt: skip
PEAK_COLOUR = "#e15759"
SERIES_STYLE = {
    "certified": ("#1f5fa8", ""),
    "stored": ("#8c8c8c", "6 4"),
    "recompute": ("#2e9e44", "2 3"),
    "tensor": ("#b07aa1", "4 2"),
}


def _nice_step(span: float, ticks: int = 5) -> float:
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _byte_step(span: float, ticks: int = 5) -> float:
    """A tick step in whole B, KiB or MiB multiples of 1, 2, 2.5 or 5, so labels stay short."""
    unit = 1048576 if span >= 4 * 1048576 else 1024 if span >= 4 * 1024 else 1
    return max(_nice_step(span / unit, ticks) * unit, 1.0)


def _axis_label(n: float, step: float = 1.0) -> str:
    """A tick label in the unit its step was chosen in (see `_byte_step`)."""
    if step >= 1048576 and n:
        return f"{n / 1048576:g} MiB"
    if step >= 1024 and n:
        return f"{n / 1024:g} KiB"
    return f"{n:,.0f} B"


def _svg_open(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{esc(title)}" font-family="sans-serif" font-size="11">',
        f"<title>{esc(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]


def svg_timeline(
    series: Sequence[dict[str, Any]],
    *,
    peak_step: int | None = None,
    peak_tensors: Sequence[dict[str, Any]] = (),
    peak_overlap: int = 0,
    lower_bound: int | None = None,
    width: int = 900,
    height: int = 300,
) -> str:
    """Live bytes per step as step lines: one series each ({"key", "label", "values"}), the peak
    step's tensors stacked as a highlighted bar, the lower bound as a dashed rule.

    `peak_overlap`: bytes the peak step's output shares with its dying input (the refined model):
    the bar stacks whole tensors, so its top is that much above the peak and the label says so."""
    left, right, top, bottom = 70, 20, 28, 40
    pw, ph = width - left - right, height - top - bottom
    n = max((len(s["values"]) for s in series), default=0)
    ymax = max([max(s["values"], default=0) for s in series] + [lower_bound or 0, 1])
    step = _byte_step(ymax)
    ytop = math.ceil(ymax / step) * step
    out = _svg_open(width, height, "memory timeline: live bytes per step")

    def x(s: float) -> float:
        return left + pw * s / max(n, 1)

    def y(v: float) -> float:
        return top + ph - ph * v / ytop

    # grid and axes
    v = 0.0
    while v <= ytop + 1e-9:
        out.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#444">{esc(_axis_label(v, step))}</text>'
        )
        v += step
    xstep = max(1, int(_nice_step(n, 10)))
    for s in range(0, n + 1, xstep):
        out.append(
            f'<line x1="{x(s):.1f}" y1="{top + ph}" x2="{x(s):.1f}" y2="{top + ph + 4}" stroke="#444"/>'
            f'<text x="{x(s):.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#444">{s}</text>'
        )
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#222">step</text>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>'
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>'
    )
    # the peak step: its live tensors stacked, each with its name on hover
    if peak_step is not None and 0 <= peak_step < n:
        base = 0
        for i, t in enumerate(sorted(peak_tensors, key=lambda t: -t["bytes"])):
            y0, y1 = y(base + t["bytes"]), y(base)
            colour = PEAK_COLOUR if i % 2 == 0 else "#f4a3a4"
            out.append(
                f'<rect x="{x(peak_step):.1f}" y="{y0:.1f}" width="{max(x(peak_step + 1) - x(peak_step), 3):.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{colour}" stroke="#ffffff" stroke-width="0.5">'
                f"<title>{esc(t['name'])}: {t['bytes']:,} B</title></rect>"
            )
            base += t["bytes"]
        if peak_overlap:
            # the bytes counted twice by the stack: the output over its dying input, shown washed out
            out.append(
                f'<rect x="{x(peak_step):.1f}" y="{y(base):.1f}" '
                f'width="{max(x(peak_step + 1) - x(peak_step), 3):.1f}" '
                f'height="{max(y(base - peak_overlap) - y(base), 0.5):.1f}" fill="#ffffff" '
                f'fill-opacity="0.6" stroke="{PEAK_COLOUR}" stroke-dasharray="2 2">'
                f"<title>{peak_overlap:,} B shared: the output is written over its dying input</title></rect>"
            )
        shared = f", {peak_overlap:,} B shared by overlap" if peak_overlap else ""
        out.append(
            f'<text x="{x(peak_step + 0.5):.1f}" y="{max(y(base) - 6, 12):.1f}" text-anchor="middle" '
            f'fill="{PEAK_COLOUR}" font-weight="bold">peak {base - peak_overlap:,} B (step {peak_step}{shared})</text>'
        )
    if lower_bound is not None:
        out.append(
            f'<line x1="{left}" y1="{y(lower_bound):.1f}" x2="{left + pw}" y2="{y(lower_bound):.1f}" '
            f'stroke="#000" stroke-dasharray="1 3"><title>lower bound {lower_bound:,} B</title></line>'
        )
    # the series, as steps; the first given (the stored order, dashed) drawn last so it stays visible
    for s in [*series[1:], *series[:1]]:
        colour, dash = SERIES_STYLE.get(s["key"], ("#333", ""))
        pts = []
        for i, val in enumerate(s["values"]):
            pts += [f"{x(i):.1f},{y(val):.1f}", f"{x(i + 1):.1f},{y(val):.1f}"]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}>'
            f"<title>{esc(s['label'])}</title></polyline>"
        )
    # legend
    lx = left + 8
    for s in series:
        colour, dash = SERIES_STYLE.get(s["key"], ("#333", ""))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        label = esc(s["label"])
        out.append(
            f'<line x1="{lx}" y1="{top - 12}" x2="{lx + 22}" y2="{top - 12}" stroke="{colour}" '
            f'stroke-width="2"{dash_attr}/><text x="{lx + 26}" y="{top - 8}" fill="#222">{label}</text>'
        )
        lx += 34 + 6.2 * len(s["label"])
    if lower_bound is not None:
        out.append(
            f'<line x1="{lx}" y1="{top - 12}" x2="{lx + 22}" y2="{top - 12}" stroke="#000" stroke-dasharray="1 3"/>'
            f'<text x="{lx + 26}" y="{top - 8}" fill="#222">lower bound</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def svg_arena_map(
    tensors: Sequence[dict[str, Any]],
    arena_bytes: int,
    steps: int,
    *,
    lower_bound: int | None = None,
    width: int = 900,
    height: int = 340,
) -> str:
    """Each tensor a rectangle: lifetime across (steps), offset up (bytes); peak tensors in red."""
    left, right, top, bottom = 70, 20, 14, 40
    pw, ph = width - left - right, height - top - bottom
    n = max(steps, 1)
    ymax = max(arena_bytes, lower_bound or 0, 1)
    ystep = _byte_step(ymax)
    out = _svg_open(width, height, "arena map: tensor offset against lifetime")

    def x(s: float) -> float:
        return left + pw * s / n

    def y(v: float) -> float:
        return top + ph - ph * v / ymax

    v = 0.0
    while v <= ymax + 1e-9:
        out.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#eeeeee"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#444">{esc(_axis_label(v, ystep))}</text>'
        )
        v += ystep
    xstep = max(1, int(_nice_step(n, 10)))
    for s in range(0, n + 1, xstep):
        out.append(f'<text x="{x(s):.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#444">{s}</text>')
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#222">step (lifetime)</text>'
        f'<text x="14" y="{top + ph / 2:.1f}" transform="rotate(-90 14 {top + ph / 2:.1f})" '
        f'text-anchor="middle" fill="#222">offset</text>'
    )
    for t in tensors:
        x0, x1 = x(t["first_step"]), x(t["last_step"] + 1)
        y0, y1 = y(t["offset"] + t["aligned_bytes"]), y(t["offset"])
        colour = PEAK_COLOUR if t.get("at_peak") else PALETTE[t["index"] % len(PALETTE)]
        tip = (
            f"{t['name']}: {t['bytes']:,} B at offset {t['offset']:,}, "
            f"steps {t['first_step']}-{t['last_step']}" + (" (live at the peak)" if t.get("at_peak") else "")
        )
        out.append(
            f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0, 1):.1f}" height="{max(y1 - y0, 0.5):.1f}" '
            f'fill="{colour}" fill-opacity="0.75" stroke="#333" stroke-width="0.6"><title>{esc(tip)}</title></rect>'
        )
        label = t["name"]
        room = (x1 - x0) / 6.0
        if y1 - y0 >= 12 and (room >= 10 or room >= len(label)):
            if len(label) > room:
                label = "…" + label[-int(room) + 1 :]
            out.append(
                f'<text x="{x0 + 3:.1f}" y="{(y0 + y1) / 2 + 4:.1f}" fill="#111" font-size="10">{esc(label)}</text>'
            )
    out.append(
        f'<line x1="{left}" y1="{y(arena_bytes):.1f}" x2="{left + pw}" y2="{y(arena_bytes):.1f}" '
        f'stroke="#000" stroke-width="1.5"/>'
        f'<text x="{left + pw}" y="{y(arena_bytes) - 3:.1f}" text-anchor="end" fill="#000">'
        f"arena {arena_bytes:,} B</text>"
    )
    out.append(
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>'
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def svg_bar(percent: float | None, status: str, width: int = 160, height: int = 12) -> str:
    """A region's fill as a small bar (green, amber when tight, red over 100 %)."""
    colour = {"overflow": "#d62728", "tight": "#e8a33d"}.get(status, "#3a9d5d")
    share = 0.0 if percent is None else min(max(percent, 0.0), 100.0) / 100.0
    label = "unknown" if percent is None else f"{percent:.1f}% used"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(label)}"><rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" '
        f'fill="#f2f2f2" stroke="#999"/><rect x="0.5" y="0.5" width="{(width - 1) * share:.1f}" '
        f'height="{height - 1}" fill="{colour}"/></svg>'
    )


def sparkline(values: Sequence[int], width: int = 60) -> str:
    """Live bytes as a line of block characters, for Markdown (down-sampled to `width` by max)."""
    if not values:
        return ""
    blocks = "▁▂▃▄▅▆▇█"
    if len(values) > width:
        per = len(values) / width
        values = [max(values[int(i * per) : max(int((i + 1) * per), int(i * per) + 1)]) for i in range(width)]
    top = max(values) or 1
    return "".join(blocks[min(int(v / top * (len(blocks) - 1) + 0.5), len(blocks) - 1)] for v in values)


def svg_budget(
    candidates: Sequence[dict[str, Any]],
    budget_bytes: int,
    measured: dict[str, int] | None = None,
    width: int = 640,
    height: int = 260,
) -> str:
    """`--arena-budget`'s trade-off: each plan it considered at (arena bytes, estimated instructions
    per inference), the chosen one ringed, the budget as a dashed rule, and the measured point
    (arena high-water, instructions) where `measure` ran the chosen plan."""
    left, right, top, bottom = 80, 20, 24, 40
    pw, ph = width - left - right, height - top - bottom
    xs = (
        [c["arena_bytes"] for c in candidates]
        + [budget_bytes]
        + ([measured["arena_bytes"]] if measured else [])
    )
    ys = [c["instructions_estimate"] for c in candidates] + ([measured["instructions"]] if measured else [])
    xstep, ystep = _byte_step(max(xs)), _nice_step(max(ys + [1]))
    xtop, ytop = math.ceil(max(xs) * 1.05 / xstep) * xstep, math.ceil(max(ys + [1]) * 1.05 / ystep) * ystep
    out = _svg_open(width, height, "arena bytes against estimated instructions per inference")

    def x(v: float) -> float:
        return left + pw * v / xtop

    def y(v: float) -> float:
        return top + ph - ph * v / ytop

    v = 0.0
    while v <= ytop + 1e-9:
        label = f"{v / 1e6:g} M" if v else "0"
        out.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#444">{label}</text>'
        )
        v += ystep
    v = 0.0
    while v <= xtop + 1e-9:
        out.append(
            f'<line x1="{x(v):.1f}" y1="{top + ph}" x2="{x(v):.1f}" y2="{top + ph + 4}" stroke="#444"/>'
            f'<text x="{x(v):.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#444">{esc(_axis_label(v, xstep))}</text>'
        )
        v += xstep
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#222">arena</text>'
        f'<text x="14" y="{top + ph / 2:.1f}" text-anchor="middle" fill="#222" '
        f'transform="rotate(-90 14 {top + ph / 2:.1f})">instructions per inference</text>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>'
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>'
        f'<line x1="{x(budget_bytes):.1f}" y1="{top}" x2="{x(budget_bytes):.1f}" y2="{top + ph}" stroke="#000" '
        f'stroke-dasharray="4 3"><title>budget {budget_bytes:,} B</title></line>'
        f'<text x="{x(budget_bytes) - 4:.1f}" y="{top + 10}" text-anchor="end" fill="#222">budget {budget_bytes:,} B</text>'
    )
    for c in sorted(candidates, key=lambda c: c["chosen"]):
        colour = SERIES_STYLE["certified"][0] if c["fits"] else "#8c8c8c"
        cx, cy = x(c["arena_bytes"]), y(c["instructions_estimate"])
        tip = f"{c['label']}: {c['arena_bytes']:,} B, est. {c['instructions_estimate']:,} instructions"
        out.append(
            f'<circle class="plan" cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{colour}"><title>{esc(tip)}</title></circle>'
        )
        if c["chosen"]:
            out.append(
                f'<circle class="chosen" cx="{cx:.1f}" cy="{cy:.1f}" r="8" fill="none" stroke="{PEAK_COLOUR}" '
                f'stroke-width="2"/><text x="{cx + 10:.1f}" y="{cy - 8:.1f}" fill="{PEAK_COLOUR}" '
                f'font-weight="bold">chosen</text>'
            )
    if measured:
        mx, my = x(measured["arena_bytes"]), y(measured["instructions"])
        tip = f"measured: {measured['arena_bytes']:,} B high-water, {measured['instructions']:,} instructions"
        out.append(
            f'<path class="measured" d="M{mx - 5:.1f},{my - 5:.1f} L{mx + 5:.1f},{my + 5:.1f} '
            f'M{mx - 5:.1f},{my + 5:.1f} L{mx + 5:.1f},{my - 5:.1f}" stroke="#222" stroke-width="2">'
            f"<title>{esc(tip)}</title></path>"
        )
    out.append("</svg>")
    return "\n".join(out)
