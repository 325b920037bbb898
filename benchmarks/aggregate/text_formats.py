"""aggregate.py's text formats of a report (reports.Table): upstream's CSV and a plain-text grid."""

from __future__ import annotations

from benchmarks.plumbing.cli_support import shown
from benchmarks.results import number_text


def format_csv(table: Table) -> str:
    """Upstream's CSV: header prefixed '# ', floats rounded to 8 decimals as Python prints them, '' for none."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f"# {table.columns[0]}"] + table.columns[1:])
    for row in table.rows:
        writer.writerow(["" if v is None else str(v) for v in row])
    return out.getvalue()


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.2f}"
        # a nonzero figure that 2 decimals would show as 0.00 (a 0.0046x speedup) keeps 2 significant digits
        return number_text.significant(value, 2) if value and text.lstrip("-") == "0.00" else text
    return shown(value)  # a model or accelerator name from a record: its escape sequences shown, never run


def format_tab(table: Table) -> str:
    """A plain-text grid (2 decimals, multi-line headers at the bottom of their cell), then the notes."""
    headers = [[shown(part) for part in h.split("\n")] for h in table.tab_columns]
    body = [[_cell_text(v) for v in row] for row in table.rows]
    numeric = [any(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in table.rows)
               for i in range(len(headers))]
    widths = [max([len(line) for line in lines] + [len(row[i]) for row in body]) for i, lines in enumerate(headers)]
    height = max(len(lines) for lines in headers)

    def rule(char: str) -> str:
        return "+" + "+".join(char * (w + 2) for w in widths) + "+"

    def line(cells: list, align: bool) -> str:
        parts = []
        for i, text in enumerate(cells):
            parts.append(text.rjust(widths[i]) if align and numeric[i] else text.ljust(widths[i]))
        return "| " + " | ".join(parts) + " |"

    out = [rule("-")]
    for k in range(height):
        out.append(line([(lines[k - (height - len(lines))] if k >= height - len(lines) else "") for lines in headers],
                        False))
    out.append(rule("="))
    for row in body:
        out.append(line(row, True))
        out.append(rule("-"))
    if not body:
        out.append(rule("-"))
    out.append("")
    out.extend(f"Note: {shown(note)}" for note in table.notes)
    return "\n".join(out) + "\n"
