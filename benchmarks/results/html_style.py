"""The look of the tools' HTML pages (aggregate.py --format=html, history.py's html): one stylesheet both
embed, so that a report and a history read alike. Self-contained: no font or file is fetched."""

import html
import json
import os

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;color:#1d2330;
padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #dde;padding-bottom:.2em}
h3{font-size:1em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #d6d9e0;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f2f4f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:after{content:' \\2195';color:#99a}
table.sortable th[data-order=asc]:after{content:' \\2191'}table.sortable th[data-order=desc]:after{content:' \\2193'}
.ok{color:#1b6e2a}.failed{color:#b3261e;font-weight:600}.skipped{color:#8a6d00}.msg{color:#555;font-size:.9em}
.facts td:first-child{color:#555;white-space:nowrap}.warn{background:#fff4e5;border:1px solid #f0c36d;
padding:.5em .8em;margin:.6em 0}.plot svg{max-width:100%;height:auto}.small{color:#666;font-size:.9em}
.unchecked{white-space:nowrap}input#filter{padding:.3em .5em;width:22em;font:inherit}.wide{overflow-x:auto}
details.rerun summary{cursor:pointer;color:#555;font-size:.9em}details.rerun code{display:block;white-space:pre-wrap;
word-break:break-all;font-size:.8em;background:#f6f7f9;padding:.3em;user-select:all;max-width:40em}
"""


def head(title: str) -> str:
    """A page's start, up to and including <body>: its title (already escaped) and the shared style."""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n")


def esc(value) -> str:
    """Text (None: empty) made safe inside HTML, quotes included."""
    return html.escape("" if value is None else str(value), quote=True)


# What a text inside a <script> must not hold as itself: `<` (`</script>`, and `<!--` with `<script`, which swallows
# the rest of the page into the script), `>` and `&` with it, and the two line separators old JavaScript ends a
# string at. Each becomes its \uXXXX escape, which JSON and JavaScript read back as the same character.
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value) -> str:
    """`value` as JSON (no NaN) safe to place inside a <script> element: the one way a page inlines data."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text.translate(str.maketrans(_SCRIPT_UNSAFE))


def table_script() -> str:
    """The tables' sorting and filtering (table_sort.js): inlined by aggregate's page, an asset of the site."""
    with open(os.path.join(os.path.dirname(__file__), "table_sort.js"), encoding="utf-8") as script:
        return script.read()
