"""The one way text from data (a model name, an accelerator, a note) reaches a matplotlib figure: shown as written.
matplotlib reads `$...$` in any text as mathtext and a malformed `$\\foo$` ends the whole figure with an error, so a
model file named so would break aggregate's page, compare --plot and history's charts for good. Every function that
makes a figure is decorated with `plain_text`: its figures are made and saved with `text.parse_math` off (and TeX
off), so every `$` is a dollar. matplotlib is imported only when such a function runs."""

from __future__ import annotations

import functools
import io

PLAIN = {"text.parse_math": False, "text.usetex": False}


def plain_text(make):
    """`make` (a function that builds and saves figures) run with mathtext and TeX off for every text."""

    @functools.wraps(make)
    def wrapper(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(PLAIN):
            return make(*args, **kwargs)

    return wrapper


def figure_bytes(figure, fmt: str, **options) -> bytes:
    """`figure` saved as `fmt` (png, svg, pdf) into bytes: a figure goes to disk only through cli_support.write_file."""
    out = io.BytesIO()
    figure.savefig(out, format=fmt, **options)
    return out.getvalue()
