"""history keeps each record's roofline fraction of attainable (docs/roofline.md) beside a generate run's figures, and
its site's config page charts it over the runs; a forward model with a fraction shows no generation columns in
`history show`, and a config without one has no such chart."""

import json

from helpers import RUN1, RUN2, call_tool, hand_record


def record(model, timestamp, fraction=None):
    out = hand_record(model, None, timestamp, 0.01, 0.02, 100)
    if fraction is not None:
        out["roofline"] = {"fraction_of_attainable": fraction, "bound": "compute"}
    return out


def test_the_config_page_charts_the_fraction_over_the_runs(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in [
        record("mlp", RUN1, 0.25), record("mlp", RUN2, 0.5), record("cnn", RUN1), record("cnn", RUN2)]))
    db = tmp_path / "h.sqlite"
    call_tool("history.py", "ingest", "--db", str(db), str(results), check_rc=0)
    call_tool("history.py", "site", "--db", str(db), "-o", str(tmp_path / "site"), check_rc=0)
    pages = {path.name: path.read_text() for path in (tmp_path / "site" / "config").glob("*.html")}
    charted = [text for text in pages.values() if "chart-roofline" in text]
    assert len(pages) == 2 and len(charted) == 1
    assert '"values":[0.25,0.5]' in charted[0] and "mlp" in charted[0]
    shown = call_tool("history.py", "show", "--db", str(db), check_rc=0).stdout
    assert "tokens/s" not in shown and "ttft" not in shown  # a fraction is no generation figure
