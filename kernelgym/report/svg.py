"""Inline SVG charts for the report page: grouped bars, lines and a scatter, with no plotting library.

Every mark carries its numbers as ``data-*`` attributes, and every bar its value as text, so the page shows the
numbers and a test can read them back from the rendered page. Values are plain floats; None is "no value" (drawn
as nothing, labelled ``n/a``).
"""
from __future__ import annotations

from html import escape
from typing import Callable, Sequence

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 30, 70
MAX_BAR_W = 60  # px: a chart of one or two categories keeps bars, not slabs
PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e",
           "#9498a0")


def color(k: int) -> str:
    """The k-th series' colour."""
    return PALETTE[k % len(PALETTE)]


def _a(text: object) -> str:
    return escape(str(text), quote=True)


def _nice_top(value: float) -> float:
    """A round axis maximum at or above `value` (1, 2, 2.5 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    step = 10.0 ** len(str(int(value))) / 100 if value >= 1 else 0.1
    for mult in (1, 2, 2.5, 5, 10, 20, 25, 50, 100):
        if step * mult * 10 >= value:
            return step * mult * 10
    return value


def _frame(title: str, body: list[str], y_top: float, y_label: str) -> str:
    """The chart's outline: title, y axis with 5 ticks from 0 to `y_top`, and `body`."""
    plot_h = HEIGHT - TOP - BOTTOM
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} '
           f'{HEIGHT}" role="img" aria-label="{_a(title)}" font-family="sans-serif" font-size="11">',
           f'<text x="{LEFT}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    for k in range(5):
        v = y_top * k / 4
        y = TOP + plot_h - plot_h * k / 4
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{v:g}</text>')
    out.append(f'<text x="14" y="{TOP + plot_h / 2:.1f}" transform="rotate(-90 14 {TOP + plot_h / 2:.1f})" '
               f'text-anchor="middle" fill="#555">{escape(y_label)}</text>')
    return "\n".join(out + body + ["</svg>"])


def _legend(series: Sequence[str]) -> list[str]:
    items, x = [], LEFT
    for k, name in enumerate(series):
        items.append(f'<rect x="{x}" y="{HEIGHT - 16}" width="10" height="10" fill="{color(k)}"/>'
                     f'<text x="{x + 14}" y="{HEIGHT - 7}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return items


def grouped_bars(title: str, categories: Sequence[str], series: dict[str, Sequence[float | None]],
                 fmt: Callable[[float], str], y_label: str = "", chart: str = "") -> str:
    """Bars: one group per category, one bar per series in each, each labelled with `fmt(value)` (``n/a`` for
    None). `series` maps a name to one value per category. `chart` names the chart in the marks' ``data-chart``."""
    values = [v for vs in series.values() for v in vs if v is not None]
    top = _nice_top(max(values, default=0.0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    group_w = plot_w / max(len(categories), 1)
    bar_w = min(MAX_BAR_W, max(2.0, group_w * 0.8 / max(len(series), 1)))
    body = []
    for i, category in enumerate(categories):
        gx = LEFT + group_w * i + (group_w - bar_w * len(series)) / 2  # the group centred on its label
        label_x = LEFT + group_w * (i + 0.5)
        body.append(f'<text x="{label_x:.1f}" y="{TOP + plot_h + 14}" text-anchor="end" '
                    f'transform="rotate(-25 {label_x:.1f} {TOP + plot_h + 14})">{escape(category)}</text>')
        for k, (name, vs) in enumerate(series.items()):
            v = vs[i]
            x = gx + bar_w * k
            h = 0.0 if v is None else plot_h * max(v, 0.0) / top
            data = f'data-chart="{_a(chart)}" data-category="{_a(category)}" data-series="{_a(name)}"'
            body.append(f'<rect class="bar" {data} data-value="{"" if v is None else repr(float(v))}" '
                        f'x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar_w - 1:.1f}" height="{h:.1f}" '
                        f'fill="{color(k)}"><title>{escape(f"{category}, {name}: ")}'
                        f'{"n/a" if v is None else escape(fmt(v))}</title></rect>')
            body.append(f'<text class="value" {data} x="{x + bar_w / 2:.1f}" y="{TOP + plot_h - h - 3:.1f}" '
                        f'text-anchor="middle" font-size="10">{"n/a" if v is None else escape(fmt(v))}</text>')
    return _frame(title, body + _legend(list(series)), top, y_label)


def line_chart(title: str, xs: Sequence[float], series: dict[str, Sequence[float | None]],
               x_label: str, y_label: str, fmt: Callable[[float], str], y_top: float = 1.0, chart: str = "") -> str:
    """Lines over `xs` (ascending), one per series, with a marker per point carrying ``data-x``/``data-y``."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x0, x1 = (xs[0], xs[-1]) if xs and xs[-1] > xs[0] else (0.0, 1.0)
    px = lambda x: LEFT + plot_w * (x - x0) / (x1 - x0)  # noqa: E731
    py = lambda y: TOP + plot_h - plot_h * y / y_top  # noqa: E731
    body = [f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 30}" text-anchor="middle" fill="#555">'
            f'{escape(x_label)}</text>']
    for k in range(6):
        x = x0 + (x1 - x0) * k / 5
        body.append(f'<text x="{px(x):.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">{x:g}</text>')
    for k, (name, ys) in enumerate(series.items()):
        points = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if points:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{color(k)}" stroke-width="2"/>')
        for x, y in points:
            body.append(f'<circle class="point" data-chart="{_a(chart)}" data-series="{_a(name)}" data-x="{x!r}" '
                        f'data-y="{float(y)!r}" cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color(k)}">'
                        f'<title>{escape(name)}: {x:g} -&gt; {escape(fmt(y))}</title></circle>')
    return _frame(title, body + _legend(list(series)), y_top, y_label)


def scatter(title: str, points: Sequence[tuple[float, float, str, str]], x_label: str, y_label: str,
            fmt_x: Callable[[float], str], fmt_y: Callable[[float], str], chart: str = "") -> str:
    """Points (x, y, series, hover label), the y axis from 0, the x axis from 0 to the largest x."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_top = _nice_top(max((p[0] for p in points), default=0.0))
    y_top = _nice_top(max((p[1] for p in points), default=0.0))
    names = list(dict.fromkeys(p[2] for p in points))
    body = [f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 30}" text-anchor="middle" fill="#555">'
            f'{escape(x_label)}</text>']
    for k in range(5):
        x = x_top * k / 4
        body.append(f'<text x="{LEFT + plot_w * k / 4:.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">'
                    f'{x:g}</text>')
    for x, y, name, label in points:
        body.append(f'<circle class="point" data-chart="{_a(chart)}" data-series="{_a(name)}" data-x="{float(x)!r}" '
                    f'data-y="{float(y)!r}" cx="{LEFT + plot_w * x / x_top:.1f}" '
                    f'cy="{TOP + plot_h - plot_h * y / y_top:.1f}" r="4" fill="{color(names.index(name))}" '
                    f'fill-opacity="0.8"><title>{escape(label)}: {escape(fmt_x(x))}, {escape(fmt_y(y))}</title>'
                    f'</circle>')
    return _frame(title, body + _legend(names), y_top, y_label)
