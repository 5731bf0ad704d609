"""HTML pieces of a self-contained page: every text escaped, every image inline (a data: URI), the
style in the page. Nothing refers to another file or the network."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence


class Markup(str):
    """A string that is already HTML (built here, its text escaped): inserted as it is. Any other
    str is text, and is escaped wherever it goes."""


Cell = str | int | float | None | Markup

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1100px; padding: 1.5em; color: #1a1a1a; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-size: 1.08em; margin-top: 1.3em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { display: inline-block; padding: 0.15em 0.7em; border-radius: 0.3em; font-weight: 600; }
.good { background: #d8f3dc; color: #1b4332; }
.bad { background: #ffd6d6; color: #7f0000; }
.neutral { background: #eee; color: #333; }
.note { color: #555; font-size: 0.9em; }
.warning { background: #fff3cd; border-left: 4px solid #e9c46a; padding: 0.5em 0.8em; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
            font-size: 0.88em; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
nav a { margin-right: 1em; }
"""


def text(value: Cell) -> Markup:
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(html.escape(str(value), quote=True))


def tag(name: str, content: Cell | Iterable[Markup] = None, **attributes: str) -> Markup:
    attrs = "".join(
        f' {key.rstrip("_").replace("_", "-")}="{html.escape(value, quote=True)}"'
        for key, value in attributes.items()
    )
    if isinstance(content, str | int | float) or content is None:
        inner = text(content)
    else:
        inner = Markup("".join(content))
    return Markup(f"<{name}{attrs}>{inner}</{name}>")


def verdict(label: str, good: bool | None) -> Markup:
    kind = "neutral" if good is None else ("good" if good else "bad")
    return tag("span", label, class_=f"verdict {kind}")


def table(
    header: Sequence[str] | None, rows: Iterable[Sequence[Cell]], numeric: Sequence[int] = ()
) -> Markup:
    parts: list[Markup] = []
    if header:
        parts.append(tag("tr", (tag("th", h) for h in header)))
    for row in rows:
        cells = (
            tag("td", cell, class_="num") if i in numeric else tag("td", cell)
            for i, cell in enumerate(row)
        )
        parts.append(tag("tr", cells))
    return tag("table", parts)


def png(data: bytes, alt: str) -> Markup:
    encoded = base64.b64encode(data).decode("ascii")
    return Markup(
        f'<img alt="{html.escape(alt, quote=True)}" src="data:image/png;base64,{encoded}">'
    )


def page(title: str, body: Iterable[Markup]) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
