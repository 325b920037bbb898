#!/usr/bin/env python3
"""`history site` at the scale of real nightly use, measured (`make bench-site`).

Generates a history straight into a SQLite database (history's schema, through database.connect): RUNS
nightly runs of MODELS models x the 10 backend labels below (default a year of 300 models: about 1.1M
records), lognormal noise, a few planted regressions and a pass -> fail. Then times `history site` as a user
runs it (a new process): the first build, a second one with nothing new (every page unchanged), and one after
one more night was added; then loads the summary, a suite page and a config page in headless Chromium and
reports each page's load time (navigation start to the charts drawn). Targets: the first build under 60 s,
each page under 1 s. Exit 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

from benchmarks.history import database, records_view
from benchmarks.results.accuracy_status import AccuracyStatus
from benchmarks.results.measurement import Measurement
from benchmarks.results.records import RecordStatus, VerificationCode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (dynamo backend, axes): 10 backend labels, each non-eager one with its eager baseline among them.
LABELS = [(None, {}), (None, {"precision": "bf16"}), ("inductor", {}), ("inductor", {"precision": "bf16"}),
          ("inductor", {"compile_mode": "max-autotune"}), ("inductor", {"compile_mode": "reduce-overhead"}),
          ("inductor", {"dynamic": "batch"}), ("aot_eager", {}), ("inductor", {"precision": "bf16", "dynamic": "all"}),
          ("cudagraphs", {})]
DAY = 86400.0
START = 1_764_000_000.0  # 2025-11-24


def _experiment(dynamo, axes) -> dict:
    return dict({"accelerator": "cuda", "accelerator_model": "NVIDIA A100", "xla": None, "xla_flags": None,
                 "dynamo": dynamo, "torch_xla2": None, "test": "eval", "batch_size": 8,
                 "enable_functionalization": False}, **axes)


def generate(path: str, runs: int, models: int, seed: int = 0) -> dict:
    """The history into `path`; returns what was planted."""
    rng = np.random.default_rng(seed)
    connection = database.connect(path)
    configs = []  # (config id, model index, label index)
    with connection:
        for m in range(models):
            model = {"suite_name": "torchbench" if m % 3 else "huggingface", "model_name": f"model_{m:03d}"}
            for index, (dynamo, axes) in enumerate(LABELS):
                record = {"model": model, "experiment": _experiment(dynamo, axes)}
                measurement = Measurement(record)
                key = json.dumps([measurement.config_key, measurement.accelerator_model])
                configs.append((database.config_id(connection, key, records_view.Labels.of(measurement)), m, index))
    base = np.exp(rng.normal(np.log(0.02), 0.8, models))  # each model's eager time
    factor = np.array([1.0, 0.7, 0.6, 0.45, 0.5, 0.55, 0.65, 0.95, 0.5, 0.8])  # each label's time / eager
    regressed = {(m, 2) for m in range(0, models, 50)}  # inductor of every 50th model: 15% slower from run R-30 on
    broken = (1, 3)  # this model's inductor[bf16] fails in the last run
    digest = 0
    for run in range(runs):
        stamp = START + run * DAY
        commit = hashlib.sha1(f"commit {run}".encode()).hexdigest()
        run_id = database.run_id(connection, stamp, "ci-a100", commit)
        noise = rng.normal(0, 0.02, len(configs))
        rows = []
        for (config, m, label), eps in zip(configs, noise):
            median = base[m] * factor[label] * np.exp(eps) * (1.15 if (m, label) in regressed and run >= runs - 30
                                                              else 1.0)
            failed = (m, label) == broken and run == runs - 1
            digest += 1
            samples = None if failed else json.dumps([round(median * (1 + 0.01 * k), 7) for k in (-1, 0, 1)])
            rows.append((f"{digest:064x}", run_id, config, 0, RecordStatus.ERROR if failed else RecordStatus.OK,
                         "" if failed else VerificationCode.PASS, samples,
                         None if failed else median * 40 + 2.0 * (label > 1),
                         None if failed else 2e9 * factor[label] * (1 + m % 7), 0 if LABELS[label][0] else None,
                         f"/nightly/{run}/results.jsonl", AccuracyStatus.FAIL_TO_RUN if failed else AccuracyStatus.PASS,
                         None if failed else median))
        with connection:
            connection.executemany("INSERT INTO measurements (digest, run_id, config_id, round, status, verification, "
                                   "samples, compile_s, peak_memory, graph_breaks, source, accuracy, median_s) VALUES "
                                   "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    connection.close()
    return {"regressed": sorted(regressed), "broken": broken, "records": digest}


def add_night(path: str, runs: int, seed: int = 1) -> None:
    """One more nightly run: every config again as in the last run, at the noise level."""
    rng = np.random.default_rng(seed)
    connection = database.connect(path)
    last = connection.execute("SELECT config_id, status, verification, samples, compile_s, peak_memory, "
                              "graph_breaks, accuracy, median_s FROM measurements WHERE run_id = "
                              "(SELECT id FROM runs ORDER BY timestamp DESC LIMIT 1)").fetchall()
    with connection:
        run_id = database.run_id(connection, START + runs * DAY, "ci-a100", hashlib.sha1(b"one more").hexdigest())
        rows = [(hashlib.sha256(f"night {c}".encode()).hexdigest(), run_id, c, 0, status, verification, samples,
                 compile_s, peak, breaks, "/nightly/new/results.jsonl", accuracy,
                 None if median is None else median * float(np.exp(rng.normal(0, 0.02))))
                for c, status, verification, samples, compile_s, peak, breaks, accuracy, median in last]
        connection.executemany("INSERT INTO measurements (digest, run_id, config_id, round, status, verification, "
                               "samples, compile_s, peak_memory, graph_breaks, source, accuracy, median_s) VALUES "
                               "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    connection.close()


def build_site(db: str, out: str) -> tuple:
    started = time.perf_counter()
    # The peak resident set of the largest child so far (getrusage: the generator runs in this process).
    child = subprocess.Popen([sys.executable, os.path.join(ROOT, "history.py"), "site", "--db", db, "-o", out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = child.communicate()
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        sys.exit(f"history site failed: {stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, f"{stdout.strip()}; largest child's peak RSS so far {peak:.0f} MiB"


def load_times(out: str, pages: list) -> list:
    """(page, milliseconds from navigation start to every chart drawn) in headless Chromium."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    found = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name in pages:
                page.goto("file://" + os.path.join(os.path.abspath(out), name))
                page.wait_for_function("document.querySelectorAll('.chart').length === "
                                       "document.querySelectorAll('.chart[data-drawn]').length")
                found.append((name, page.evaluate("performance.now()"), os.path.getsize(os.path.join(out, name))))
        finally:
            browser.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=365)
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--output-dirname", default="output/bench-site")
    options = parser.parse_args()
    os.makedirs(options.output_dirname, exist_ok=True)
    db = os.path.join(options.output_dirname, "history.sqlite")
    out = os.path.join(options.output_dirname, "site")
    for path in (db, out):
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    started = time.perf_counter()
    planted = generate(db, options.runs, options.models)
    print(f"generated {planted['records']} records ({options.runs} runs x {options.models} models x {len(LABELS)} "
          f"backend labels) in {time.perf_counter() - started:.1f} s: {os.path.getsize(db) / 2**20:.0f} MiB")
    first, text = build_site(db, out)
    print(f"first build:   {first:6.1f} s  ({text})")
    again, text = build_site(db, out)
    print(f"no new runs:   {again:6.1f} s  ({text})")
    add_night(db, options.runs)
    night, text = build_site(db, out)
    print(f"one more run:  {night:6.1f} s  ({text})")
    suite = sorted(os.listdir(os.path.join(out, "suite")))[0]
    pages = ["index.html", f"suite/{suite}", "config/1.html"]
    times = load_times(out, pages)
    for name, ms, size in times:
        print(f"load {name:<40} {ms:7.0f} ms  ({size / 1024:.0f} KiB)")
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    missed = [f"first build {first:.1f} s >= 60 s"] if first >= 60 else []
    missed += [f"{name} loads in {ms:.0f} ms >= 1000" for name, ms, _ in times if ms >= 1000]
    for line in missed:
        print(f"target missed: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
