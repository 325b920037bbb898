"""`history site`: a static site of a history database. A generated history of 16 nightly runs (ingested as
records, as CI would) with a planted regression (mlp under Inductor 30% slower from run 10 on) and a planted
pass -> fail (cnn under Inductor fails in the newest run): the summary, a per-suite page and a per-config page
carry the right numbers (computed here from the records), links resolve, a rebuild with nothing new writes no
page; a site of upstream PyTorch/XLA records works; bad input is one line and exit 2. In headless Chromium
(integration tier): the pages render offline, the charts are drawn, a table sorts, links lead where they say."""

import hashlib
import json
import math
import os
import re
import shutil
import statistics
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from benchmarks.history import cli, detection
from benchmarks.plumbing.safe_paths import safe_name
from helpers import ROOT, call_tool

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# A suite line's page and row are named by safe_name of its key: the machine's name has a space (or parentheses),
# so the name ends with its hash (two machines that differ only there get pages of their own).
INDUCTOR_LINE = safe_name("dummy-inductor-eval-Test CPU")
EAGER_LINE = safe_name("dummy-eager-eval-Test CPU")
UPSTREAM_LINE = safe_name("torchbench-inductor-eval-Intel(R) Xeon(R) Processor")
RUNS, STEP_AT, SLOWER = 16, 10, 1.30
MODELS = {"mlp": 0.010, "cnn": 0.020, "tiny": 0.004}
INDUCTOR_FACTOR = {"mlp": 0.5, "cnn": 0.8, "tiny": 0.6}


def record(model, run, backend):
    """One of our records: `model` under `backend` (None: eager) in nightly run `run` (commit c<run>)."""
    level = MODELS[model] * (INDUCTOR_FACTOR[model] if backend else 1.0)
    if backend and model == "mlp" and run >= STEP_AT:
        level *= SLOWER
    rng = np.random.default_rng(run * 10 + len(model) + (1 if backend else 0))
    values = (level * np.exp(rng.normal(0, 0.005, 8))).tolist()
    failed = backend and model == "cnn" and run == RUNS - 1
    out = {"model": {"suite_name": "dummy", "model_name": model},
           "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                          "dynamo": backend, "torch_xla2": None, "test": "eval", "batch_size": 8,
                          "enable_functionalization": False},
           "repeat": 8, "iterations_per_run": 1, "timestamp": 1.7e9 + run * 86400.0, "schema_version": 1,
           "metrics": {"warmup_time": [level * (30 if backend else 2)], "per_iter_time": values, "total_time": values,
                       "peak_memory_bytes": [2 ** 20 * (100 if backend else 160)]},
           "verification_code": "PASS", "accuracy": "pass", "status": "ok", "warmup": 1,
           "environment": {"hostname": "ci", "git_commit": f"c{run:02d}",
                           "torch": "2.14.1+cu130" if run >= STEP_AT else "2.9.1+cu128"}}
    if failed:
        out.update(status="error", accuracy="fail_to_run", verification_code=None,
                   metrics={"error": "RuntimeError: boom"},
                   error={"type": "RuntimeError", "message": "boom", "phase": "run", "log": None})
    return out


def history(*args) -> int:
    return cli.main([str(a) for a in args])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The planted history ingested from nightly results files, and its site (baseline: the run before the step)."""
    root = tmp_path_factory.mktemp("site")
    records = {}
    for run in range(RUNS):
        night = root / "nightly" / f"{run:02d}"
        night.mkdir(parents=True)
        found = [record(model, run, backend) for model in MODELS for backend in (None, "inductor")]
        (night / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in found))
        records[run] = found
    db = root / "history.sqlite"
    assert history("ingest", root / "nightly", "--db", db) == 0
    # A log where the runner writes it, for one config of the newest run: the suite page links it.
    from benchmarks.config.experiment_config import ExperimentConfig
    from benchmarks.plumbing import safe_paths

    newest = records[RUNS - 1][0]
    log = Path(safe_paths.log_path(str(root / "nightly" / f"{RUNS - 1:02d}"), newest["model"],
                                     ExperimentConfig.from_dict(newest["experiment"])))
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("the child's output\n")
    out = root / "out"
    assert history("site", "--db", db, "-o", out, "--baseline", f"c{STEP_AT - 1:02d}") == 0
    return root, out, records, db


def steady_median(r):
    return statistics.median(r["metrics"]["per_iter_time"])


def expected_speedup(records, run, model):
    by = {(r["model"]["model_name"], r["experiment"]["dynamo"]): r for r in records[run]}
    eager, mine = by[(model, None)], by[(model, "inductor")]
    return steady_median(eager) / steady_median(mine) if mine["status"] == "ok" else None


def cells(html: str, attribute: str, value: str) -> list:
    """The <td> tags (with their text) of the rows whose tr has attribute=value."""
    row = re.search(rf'<tr {attribute}="{re.escape(value)}"[^>]*>(.*?)</tr>', html, re.S)
    assert row, f"no row {attribute}={value}"
    return re.findall(r"<td([^>]*)>(.*?)</td>", row.group(1), re.S)


def attr(tag: str, name: str) -> str:
    return re.search(rf'{name}="([^"]*)"', tag).group(1)


def test_the_summary_has_the_dashboard_numbers_and_the_planted_changes(site):
    root, out, records, _ = site
    html = (out / "index.html").read_text()
    inductor = cells(html, "data-line", INDUCTOR_LINE)
    by_metric = {attr(tag, "data-metric"): tag for tag, _ in inductor if "data-metric" in tag}
    # Pass rate: cnn fails in the newest run.
    assert float(attr(by_metric["pass_rate"], "data-newest")) == pytest.approx(200 / 3, abs=1e-3)
    assert float(attr(by_metric["pass_rate"], "data-baseline")) == 100
    assert "worse" in by_metric["pass_rate"]  # a pass -> fail is an event, coloured without a change point
    # Geomean speedup over the passing configs, both runs, from the records themselves.
    for run, key in ((RUNS - 1, "data-newest"), (STEP_AT - 1, "data-baseline")):
        values = [v for v in (expected_speedup(records, run, m) for m in MODELS) if v is not None]
        geomean = math.exp(statistics.fmean(map(math.log, values)))
        assert float(attr(by_metric["speedup"], key)) == pytest.approx(geomean, rel=1e-4)
    # The speedup fell by the planted step, and history's change points put a change between the runs: red.
    assert "worse" in by_metric["speedup"]
    # Compression: eager's peak / inductor's = 1.6; compile latency: inductor's first run - eager's.
    assert float(attr(by_metric["compression"], "data-newest")) == pytest.approx(1.6)
    latency = statistics.fmean(MODELS[m] * INDUCTOR_FACTOR[m] * (SLOWER if m == "mlp" else 1) * 30 - MODELS[m] * 2
                               for m in ("mlp", "tiny"))
    assert float(attr(by_metric["compile_latency"], "data-newest")) == pytest.approx(latency, rel=1e-6)
    assert float(attr(by_metric["peak_memory"], "data-newest")) == pytest.approx(100)
    eager = {attr(tag, "data-metric"): tag for tag, _ in cells(html, "data-line", EAGER_LINE)
             if "data-metric" in tag}
    assert float(attr(eager["pass_rate"], "data-newest")) == 100 and "unsure" in eager["pass_rate"]
    charts = json.loads(re.search(r"window.SITE_CHARTS=(.*?);</script>", html, re.S).group(1))
    speedup_chart = next(c for c in charts if c["id"] == "chart-dummy-speedup")
    assert len(speedup_chart["x"]) == RUNS and speedup_chart["series"][0]["marks"] == [STEP_AT]


def test_the_suite_page_marks_the_pass_to_fail_and_the_regression(site):
    root, out, records, _ = site
    html = (out / "suite" / f"{INDUCTOR_LINE}.html").read_text()
    assert re.search(r'<td id="new-failures">1</td>', html)
    cnn = re.search(r'<tr data-config="\d+" class="newfail">(.*?)</tr>', html, re.S).group(1)
    assert "cnn bs=8" in cnn and 'data-status-newest="error"' in cnn and 'data-status-baseline="pass"' in cnn
    assert html.count('class="newfail"') == 1
    mlp_id = re.search(r'<tr data-config="(\d+)"><td data-sort="mlp bs=8">', html).group(1)
    row = cells(html, "data-config", mlp_id)
    speedup, time = row[2][0], row[3][0]
    assert float(attr(speedup, "data-newest")) == pytest.approx(expected_speedup(records, RUNS - 1, "mlp"), rel=1e-4)
    assert float(attr(speedup, "data-baseline")) == pytest.approx(expected_speedup(records, STEP_AT - 1, "mlp"),
                                                                  rel=1e-4)
    newest_mlp = next(r for r in records[RUNS - 1] if r["model"]["model_name"] == "mlp" and r["experiment"]["dynamo"])
    assert float(attr(time, "data-newest")) == pytest.approx(1000 * steady_median(newest_mlp), rel=1e-4)
    assert "worse" in speedup and "worse" in time
    tiny_id = re.search(r'<tr data-config="(\d+)"><td data-sort="tiny bs=8">', html).group(1)
    assert "unsure" in cells(html, "data-config", tiny_id)[3][0]  # no change in tiny: grey


def test_the_config_page_names_the_change_its_commits_and_the_bisect_command(site):
    root, out, records, _ = site
    suite = (out / "suite" / f"{INDUCTOR_LINE}.html").read_text()
    mlp_id = re.search(r'<tr data-config="(\d+)"><td data-sort="mlp bs=8">', suite).group(1)
    html = (out / "config" / f"{mlp_id}.html").read_text()
    changes = re.findall(r'<h3 class="change" data-after="([^"]+)">[^:]+:\d+: ([0-9.]+)x time \((\w+)\)', html)
    assert changes == [(f"c{STEP_AT:02d}", changes[0][1], "slower")]
    assert float(changes[0][1]) == pytest.approx(SLOWER, rel=0.03)
    assert f"git log --oneline c{STEP_AT - 1:02d}..c{STEP_AT:02d}" in html
    command = unescape(re.search(r'<pre class="cmd bisect">(.*?)</pre>', html, re.S).group(1))
    assert command.startswith(f"history.py bisect --repo PATH/TO/YOUR/REPO --good c{STEP_AT - 1:02d} "
                              f"--bad c{STEP_AT:02d} ")
    assert "-- --suite-name=dummy '--filter=^(?-i:mlp)$' --accelerator=cpu --xla=None --dynamo=inductor --test=eval " \
           "--batch-size=8" in command
    # The runs around the change: three before, three after, the last before and first after named.
    assert html.count("<td>last before</td>") == 1 and html.count("<td>first after</td>") == 1
    runs = re.search(r'<table class="runs">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    assert re.findall(r"<code>(c\d+)</code>", runs) == [f"c{run:02d}" for run in range(STEP_AT - 3, STEP_AT + 3)]
    # Each run names its torch, and a change across a torch upgrade says so.
    assert re.findall(r"<code>c\d+</code></td><td>([^<]*)</td>", runs) == ["2.9.1+cu128"] * 3 + ["2.14.1+cu130"] * 3
    assert '<p class="torch-changed">The torch changed between these runs too: 2.9.1+cu128 &rarr; 2.14.1+cu130.</p>' \
        in html
    cnn_id = re.search(r'<tr data-config="(\d+)" class="newfail">', suite).group(1)
    cnn = (out / "config" / f"{cnn_id}.html").read_text()
    assert re.search(r'<ul class="transitions"><li>[^<]*c15 torch 2\.14\.1\+cu130: pass &rarr; error', cnn)


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("href", "src"):
            if attrs.get(name):
                self.found.append(attrs[name])


def test_every_link_resolves_and_nothing_is_fetched(site):
    root, out, _, _ = site
    pages = [out / "index.html"] + sorted((out / "suite").glob("*.html")) + sorted((out / "config").glob("*.html"))
    assert len(pages) == 1 + 2 + 6
    kinds = set()
    for page in pages:
        parser = Links()
        parser.feed(page.read_text())
        for link in parser.found:
            assert not re.match(r"(https?:)?//", link), f"{page.name} fetches {link}"
            target = (page.parent / link).resolve()
            assert target.is_file(), f"{page.name}: {link} does not resolve"
            kinds.add(link.rsplit(".", 1)[-1])
    assert {"html", "js", "css", "log", "jsonl"} <= kinds  # pages, assets, a log and a results file


def test_a_rebuild_without_new_runs_writes_nothing(site, tmp_path, capsys):
    root, out, records, db = site
    copy = tmp_path / "out"
    assert history("site", "--db", db, "-o", copy, "--baseline", f"c{STEP_AT - 1:02d}") == 0
    capsys.readouterr()
    assert history("site", "--db", db, "-o", copy, "--baseline", f"c{STEP_AT - 1:02d}") == 0
    assert "0 page(s) written, 15 unchanged; 0 series tested" in capsys.readouterr().out
    # Removing a page's file makes the next build write it again.
    (copy / "config" / "1.html").unlink()
    assert history("site", "--db", db, "-o", copy, "--baseline", f"c{STEP_AT - 1:02d}") == 0
    assert "1 page(s) written, 14 unchanged" in capsys.readouterr().out


def test_a_full_disk_stops_the_build_in_one_line_and_the_next_build_finishes(site, tmp_path):
    """The disk refuses the 4th page (plumbing/disk_writes.py's fault injection, as on a full disk): one line naming
    the page, exit 2, no temporary file and no torn page left; once there is space the same command finishes
    and a third build finds every page current."""
    root, out, records, db = site
    copy = tmp_path / "out"
    flags = ("history.py", "site", "--db", db, "-o", copy, "--baseline", f"c{STEP_AT - 1:02d}")
    done = call_tool(*flags, env={**os.environ, "PTBENCH_WRITE_FAULT": "ENOSPC:*.html:3"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "No space left on device" in done.stderr and ".html" in done.stderr
    written = sorted(copy.rglob("*"))
    assert not [p for p in written if p.name.endswith(".tmp")]
    pages = [p for p in written if p.suffix == ".html"]
    assert len(pages) == 3 and all(p.read_text().rstrip().endswith("</html>") for p in pages)
    assert "page(s) written" in call_tool(*flags, check_rc=0).stdout
    assert "0 page(s) written, 15 unchanged" in call_tool(*flags, check_rc=0).stdout


def test_newest_and_baseline_by_date_commit_and_bad_ones(site, tmp_path):
    root, out, records, db = site
    other = tmp_path / "by-date"
    done = call_tool("history.py", "site", "--db", db, "-o", other, "--newest", "2023-11-21", "--baseline", "c03",
                    check_rc=0)
    assert "-> " in done.stdout
    html = (other / "index.html").read_text()
    assert "Newest run</td><td>2023-11-21" in html and "Baseline run</td><td>2023-11-17" in html
    assert re.search(r"Newest run</td><td>2023-11-21 \d\d:\d\d c07 torch 2\.9\.1\+cu128</td>", html)
    assert re.search(r"Baseline run</td><td>2023-11-17 \d\d:\d\d c03 torch 2\.9\.1\+cu128</td>", html)
    newest = (site[1] / "index.html").read_text()  # the site's own newest run: after the torch upgrade
    assert re.search(r"Newest run</td><td>\d{4}-\d\d-\d\d \d\d:\d\d c15 torch 2\.14\.1\+cu130</td>", newest)
    for flags, message in ((["--newest", "nosuch"], "--newest nosuch: no run has that commit"),
                           (["--baseline", "1999-01-01"], "--baseline 1999-01-01: no run on or before that day"),
                           (["--window", "0"], "--window")):
        done = call_tool("history.py", "site", "--db", db, "-o", tmp_path / "bad", *flags)
        assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = call_tool("history.py", "site", "--db", tmp_path / "missing.sqlite", "-o", tmp_path / "x")
    assert done.returncode == 2 and "no history database" in done.stderr and done.stderr.count("\n") == 1
    (tmp_path / "a-file").write_text("")
    done = call_tool("history.py", "site", "--db", db, "-o", tmp_path / "a-file")
    assert done.returncode == 2 and "not a directory" in done.stderr and done.stderr.count("\n") == 1
    from benchmarks.history import database

    database.connect(str(tmp_path / "empty.sqlite")).close()
    done = call_tool("history.py", "site", "--db", tmp_path / "empty.sqlite", "-o", tmp_path / "y")
    assert done.returncode == 1 and "holds no record" in done.stderr and not (tmp_path / "y").exists()


def test_a_generation_configs_page_shows_its_figures_and_a_forward_ones_none(site, tmp_path):
    from test_generation_figures import QWEN, forward_record, generation_record

    records = {run: [generation_record(run, level=level), generation_record(run, backend="inductor", level=level / 2),
                     forward_record(run)] for run, level in enumerate((1.0, 1.1, 0.9, 1.0))}
    night = tmp_path / "results.jsonl"
    night.write_text("".join(json.dumps(r) + "\n" for found in records.values() for r in found))
    db, out = tmp_path / "h.sqlite", tmp_path / "out"
    assert history("ingest", night, "--db", db) == 0 and history("site", "--db", db, "-o", out) == 0
    suite = next((out / "suite").glob("huggingface-inductor*.html")).read_text()
    config_id = re.search(rf'<tr data-config="(\d+)"><td data-sort="{re.escape(QWEN)} bs=1">', suite).group(1)
    html = (out / "config" / f"{config_id}.html").read_text()
    table = re.search(r'<table class="generation">(.*?)</table>', html, re.S).group(1)
    heads = [unescape(h) for h in re.findall(r"<th[^>]*>([^<]*)</th>", table)]
    assert heads == ["Run", "Commit", "Torch", "Time to first token (ms)", "Decode time per token (ms)",
                     "Decode time per token, p90 (ms)", "Decode tokens per second (higher is better)"]
    rows = re.findall(r"<tr><td>.*?</tr>", table, re.S)
    assert [re.search(r"<code>(c\d+)</code>", row).group(1) for row in rows] == ["c03", "c02", "c01", "c00"]
    newest = next(r for r in records[3] if r["experiment"]["dynamo"] == "inductor")
    numbers = [float(v) for v in re.findall(r'<td class="num">([^<]*)</td>', rows[0])]
    metrics = newest["metrics"]
    assert numbers == pytest.approx([1e3 * statistics.median(metrics["time_to_first_token"]),
                                     1e3 * statistics.median(metrics["decode_per_token_time"]),
                                     1e3 * statistics.median(metrics["decode_per_token_p90_time"]),
                                     statistics.median(metrics["decode_tokens_per_second"])], abs=6e-4)
    charts = json.loads(re.search(r"window.SITE_CHARTS=(.*?);</script>", html).group(1))
    titles = [chart["title"] for chart in charts]
    assert titles[-3:] == ["Time to first token (ms)", "Decode time per token (ms)",
                           "Decode tokens per second (higher is better)"]
    rate = charts[-1]["series"][0]["values"]
    assert rate[-1] == pytest.approx(statistics.median(metrics["decode_tokens_per_second"]), rel=1e-6)
    assert [s["label"] for s in charts[-2]["series"]] == [f"{QWEN} bs=1 median", f"{QWEN} bs=1 p90"]
    # A forward model's page, here and in the planted history, has none of it.
    _, planted, _, _ = site
    for page in list((out / "config").glob("*.html")) + list((planted / "config").glob("*.html")):
        text = page.read_text()
        if "huggingface/" not in text:
            assert "Generation figures" not in text and "higher is better" not in text, page


def upstream_history(tmp_path):
    """Upstream PyTorch/XLA's records (tests/fixtures/analyzer/upstream.jsonl, with an eager BERT_pytorch of
    the same format beside its Inductor one) as three nightly runs."""
    lines = [json.loads(line) for line in (ROOT / "tests/fixtures/analyzer/upstream.jsonl").read_text().splitlines()]
    eager = json.loads(json.dumps(lines[0]))
    eager["experiment"]["dynamo"] = None
    eager["metrics"] = {"total_time": [8.0, 2.0, 4.0, 6.0], "per_iter_time": [8.0, 2.0, 4.0, 6.0]}
    db = tmp_path / "upstream.sqlite"
    for night in range(3):
        found = [dict(r, timestamp=r["timestamp"] + night * 86400) for r in lines + [eager]]
        path = tmp_path / f"night{night}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in found))
        assert history("ingest", path, "--db", db, "--commit", f"u{night}") == 0
    return db


def test_a_site_of_upstream_records(tmp_path):
    db = upstream_history(tmp_path)
    out = tmp_path / "site"
    assert history("site", "--db", db, "-o", out) == 0
    html = (out / "index.html").read_text()
    inductor = {attr(tag, "data-metric"): tag for tag, _ in
                cells(html, "data-line", UPSTREAM_LINE)
                if "data-metric" in tag}
    # Upstream's warm-up rule: the first sample is left out: eager median(2, 4, 6) / Inductor median(1, 2, 3).
    assert float(attr(inductor["speedup"], "data-newest")) == pytest.approx(2.0)
    assert len(list((out / "config").glob("*.html"))) == 7 and len(list((out / "suite").glob("*.html"))) == 5


def test_the_vendored_chart_library_is_the_pinned_one():
    vendor = ROOT / "benchmarks" / "history" / "site" / "vendor"
    readme = (vendor / "README.md").read_text()
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        digest = hashlib.sha256((vendor / name).read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(name)}` \| .* \| `{digest}` \|", readme), name
    assert "MIT" in (vendor / "uPlot.LICENSE").read_text()


def test_giving_up_early_finds_the_same_change_points(monkeypatch):
    """detection.permutation_p stops once a test can no longer pass: the change points are the ones the full test
    finds (the generator's stream is drawn in the same order)."""
    rng = np.random.default_rng(7)
    series = []
    for i in range(60):
        values = np.log(1 + 0.02 * rng.standard_normal(int(rng.integers(6, 90))))
        if i % 2:
            values[int(rng.integers(3, len(values) - 2)):] += rng.choice([0.03, 0.1, -0.2])
        series.append(values)
    early = [detection.change_points(v, min_change=0.02, seed=i) for i, v in enumerate(series)]
    full_test = detection.permutation_p
    monkeypatch.setattr(detection, "permutation_p",
                        lambda *args, give_up_above=1.0: full_test(*args, give_up_above=1.0))
    assert [detection.change_points(v, min_change=0.02, seed=i) for i, v in enumerate(series)] == early
    assert sum(map(len, early)) >= 20


# ---------------------------------------------------------------- in a real browser

def browser_pages(p):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, errors = [], []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
               else (requests.append(route.request.url), route.abort()))
    page.on("pageerror", lambda error: errors.append(str(error)))
    return browser, page, requests, errors


def drawn(page):
    page.wait_for_function("document.querySelectorAll('.chart').length > 0 && document.querySelectorAll('.chart')"
                           ".length === document.querySelectorAll('.chart[data-drawn]').length", timeout=10000)


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (make browser installs Debian's)")
def test_in_a_real_browser_the_three_pages_render_sort_and_link(site):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    root, out, records, _ = site
    with playwright.sync_playwright() as p:
        browser, page, requests, errors = browser_pages(p)
        try:
            page.goto((out / "index.html").as_uri())
            drawn(page)
            assert page.locator(".chart canvas").count() == 5  # one trend chart per number (one suite)
            row = page.locator(f'tr[data-line="{INDUCTOR_LINE}"]')
            assert row.locator('td[data-metric="pass_rate"]').inner_text().startswith("67%")
            page.fill("#filter", "inductor")
            assert page.locator("#summary tbody tr:visible").count() == 1
            row.locator("a").first.click()
            page.wait_for_url(f"**/suite/{INDUCTOR_LINE}.html")
            first_cells = "#models tbody td:first-child"
            models = lambda: [t.split(" ")[0] for t in page.locator(first_cells).all_inner_texts()]  # noqa
            page.click("#models thead th:nth-child(3)")  # speedup, ascending
            speedups = [float(v) for v in page.locator("#models tbody td:nth-child(3)").evaluate_all(
                "cells => cells.map(c => c.getAttribute('data-sort')).filter(v => v !== null)")]
            assert speedups == sorted(speedups) and len(speedups) == 2 and models()[-1] == "cnn"  # no number: last
            assert page.locator("tr.newfail").inner_text().startswith("cnn")
            page.locator("tr", has_text="mlp").get_by_role("link", name="series").click()
            page.wait_for_url("**/config/*.html")
            drawn(page)
            assert page.locator("h3.change").count() == 1 and "bisect" in page.locator("pre.bisect").inner_text()
            # Hovering the chart names the run and its commit.
            box = page.locator("#chart-time .u-over").bounding_box()
            page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
            assert re.search(r"run \d{4}-\d\d-\d\d \d\d:\d\d c15", page.locator("#chart-time .runinfo").inner_text())
        finally:
            browser.close()
    assert requests == [] and errors == []


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (make browser installs Debian's)")
def test_in_a_real_browser_a_site_of_upstream_records(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    db = upstream_history(tmp_path)
    assert history("site", "--db", db, "-o", tmp_path / "site") == 0
    with playwright.sync_playwright() as p:
        browser, page, requests, errors = browser_pages(p)
        try:
            page.goto((tmp_path / "site" / "index.html").as_uri())
            drawn(page)
            text = page.locator(f'tr[data-line="{UPSTREAM_LINE}"] '
                                'td[data-metric="speedup"]').inner_text()
            assert text.startswith("2.00x")
        finally:
            browser.close()
    assert requests == [] and errors == []


def test_a_cell_passes_by_the_records_verdict_not_upstreams_code(tmp_path):
    """The site's pass/fail is the one verdict: a bf16 config whose upstream same-precision check said FAIL but whose
    accuracy passed passes; a row ingested before the accuracy column is judged by the verdict derived from it."""
    from benchmarks.history import database
    from benchmarks.history.site import grid

    judged = [dict(record(model, 0, "inductor"), verification_code="FAIL") for model in ("mlp", "cnn")]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(one) + "\n" for one in judged))
    db = tmp_path / "history.sqlite"
    assert history("ingest", results, "--db", db) == 0
    connection = database.connect(str(db))
    cnn = {config.id for config in grid.load(connection).configs if config.labels["model"] == "cnn"}
    connection.execute("UPDATE measurements SET accuracy = NULL WHERE config_id = ?", tuple(cnn))  # an older row
    cells = grid.load(connection)
    passed = {config.labels["model"]: bool(cells.passed[0, config.column]) for config in cells.configs}
    assert passed == {"mlp": True, "cnn": False}
    assert list(cells.failures.values()) == ["fail_accuracy"]  # derived from upstream's FAIL: the row has no verdict
