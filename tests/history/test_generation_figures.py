"""history's LLM generation figures (docs/history.md, show): a record of a model run by `generate` keeps the median
over its timed runs of time to first token, decode time per token (median and p90) and decode tokens per second
(results/metric_words.generation_figures); `show`'s table, CSV and JSON name them with their units and direction
(more tokens per second is better), a run of several rounds pools them, a forward model's rows leave them empty and
its table is as it was, and ingesting a record again stores nothing new."""

import csv
import io
import json
import sqlite3
import statistics

import pytest

from benchmarks.history import formats
from helpers import call_tool

QWEN = "Qwen/Qwen3-0.6B"
PROMPT, NEW = 32, 16
COLUMNS = [figure.column for figure in formats.GENERATION_COLUMNS]


def generation_record(run, *, backend=None, level=1.0, round_=0, status="ok"):
    """A record of Qwen3-0.6B run by generate (child/generation.py's metrics: one value per timed run, three runs) in
    nightly run `run` (commit c<run>); `level` scales its times (its rate by the inverse)."""
    ttft = [level * v for v in (0.120, 0.110, 0.130)]
    per_token = [level * v for v in (0.020, 0.022, 0.021)]
    p90 = [level * v for v in (0.025, 0.027, 0.026)]
    rate = [1 / t for t in per_token]
    total = [first + (NEW - 1) * step for first, step in zip(ttft, per_token)]
    out = {"model": {"suite_name": "huggingface", "model_name": QWEN},
           "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                          "dynamo": backend, "torch_xla2": None, "test": "eval", "batch_size": 1,
                          "enable_functionalization": False, "prompt_tokens": PROMPT, "new_tokens": NEW},
           "repeat": 3, "iterations_per_run": 1, "timestamp": 1.7e9 + run * 86400.0, "schema_version": 1,
           "round": round_, "status": status, "warmup": 1, "verification_code": "VERIFIER_SKIPPED",
           "metrics": {"warmup_time": [level * 3.0], "total_time": total, "per_iter_time": total,
                       "generate_time": total, "time_to_first_token": ttft, "decode_per_token_time": per_token,
                       "decode_per_token_p90_time": p90, "decode_tokens_per_second": rate,
                       "compile_time": [level * 3.0 - statistics.median(total)],
                       "peak_memory_bytes": [2.5e9] * 3},
           "generation": {"task": "text-generation", "prompt_tokens": PROMPT, "new_tokens": NEW,
                          "positions": PROMPT + NEW, "batch_size": 1, "generated_tokens": NEW},
           "environment": {"hostname": "ci", "git_commit": f"c{run:02d}", "torch": "2.9.1"}}
    if status != "ok":
        out["metrics"] = {"error": "RuntimeError: boom"}
        out["error"] = {"type": "RuntimeError", "message": "boom", "phase": "run", "log": None}
    return out


def forward_record(run):
    """A forward model's record in the same run: no generation figures."""
    values = [0.010, 0.011, 0.0105]
    return {"model": {"suite_name": "dummy", "model_name": "mlp"},
            "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                           "dynamo": None, "torch_xla2": None, "test": "eval", "batch_size": 8,
                           "enable_functionalization": False},
            "repeat": 3, "iterations_per_run": 1, "timestamp": 1.7e9 + run * 86400.0, "schema_version": 1,
            "status": "ok", "warmup": 1, "verification_code": "VERIFIER_SKIPPED",
            "metrics": {"warmup_time": [1.0], "per_iter_time": values, "total_time": values},
            "environment": {"hostname": "ci", "git_commit": f"c{run:02d}", "torch": "2.9.1"}}


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def history(*args, check_rc=None):
    return call_tool("history.py", *map(str, args), check_rc=check_rc)


def expected(record) -> dict:
    """The record's figures as show writes them: medians over its timed runs, in ms and tokens per second."""
    metrics = record["metrics"]
    return {"ttft_ms": 1e3 * statistics.median(metrics["time_to_first_token"]),
            "decode_ms_per_token": 1e3 * statistics.median(metrics["decode_per_token_time"]),
            "decode_p90_ms_per_token": 1e3 * statistics.median(metrics["decode_per_token_p90_time"]),
            "decode_tokens_per_s": statistics.median(metrics["decode_tokens_per_second"])}


@pytest.fixture
def nightly(tmp_path):
    """Three runs of Qwen3 (eager and inductor) beside a forward model, ingested."""
    records = [r for run in range(3) for r in (generation_record(run), generation_record(run, backend="inductor",
                                                                                            level=0.5),
                                               forward_record(run))]
    results = write(tmp_path / "results.jsonl", records)
    db = tmp_path / "h.sqlite"
    history("ingest", results, "--db", db, check_rc=0)
    return db, results, records


def test_csv_and_json_have_each_runs_figures_and_a_forward_model_leaves_them_empty(nightly):
    db, _, records = nightly
    rows = list(csv.DictReader(io.StringIO(history("show", "--db", db, "--format=csv", check_rc=0).stdout)))
    assert tuple(rows[0]) == formats.SERIES_COLUMNS
    assert {"ttft_ms", "decode_ms_per_token", "decode_tokens_per_s"} <= set(formats.SERIES_COLUMNS)
    by_config = {}
    for row in rows:
        by_config.setdefault((row["model"], row["backend"]), []).append(row)
    generated = [(key, found) for key, found in by_config.items() if key[0] == QWEN]
    assert len(generated) == 2
    for (_, backend), found in generated:
        wanted = [r for r in records if r["model"]["model_name"] == QWEN
                  and (r["experiment"]["dynamo"] or "eager") == backend.split("[")[0]]
        assert len(found) == len(wanted) == 3
        for row, record in zip(found, wanted):
            for column, value in expected(record).items():
                assert float(row[column]) == pytest.approx(value, rel=1e-5), (backend, column)
    for row in by_config[("mlp", "eager")]:
        assert all(row[column] == "" for column in COLUMNS)
        assert row["median_ms"] != ""

    shown = json.loads(history("show", "--db", db, "--format=json", check_rc=0).stdout)
    assert shown["directions"]["decode_tokens_per_s"] == "higher is better"
    assert shown["directions"]["ttft_ms"] == "lower is better"
    configs = {(c["labels"]["model"], c["labels"]["backend"].split("[")[0]): c for c in shown["configs"]}
    eager = configs[(QWEN, "eager")]["runs"]
    assert [run["commit"] for run in eager] == ["c00", "c01", "c02"]
    for column, value in expected(records[0]).items():
        assert eager[0][column] == pytest.approx(value, rel=1e-9)
    assert all(run[column] is None for run in configs[("mlp", "eager")]["runs"]
               for column in COLUMNS)


def test_the_table_shows_them_only_where_a_series_has_them(nightly):
    db, _, records = nightly
    table = history("show", "--db", db, "-k", "Qwen", check_rc=0).stdout
    header = next(line for line in table.splitlines() if "run (UTC)" in line)
    assert "ttft ms" in header and "decode ms/token" in header and "tokens/s" in header
    assert "tokens/s: decode tokens per second, higher is better" in table
    first = next(line for line in table.splitlines() if " c00 " in line)
    assert f"{expected(records[0])['decode_tokens_per_s']:.4g}" in first
    forward = history("show", "--db", db, "-k", "mlp", check_rc=0).stdout
    assert "ttft" not in forward and "tokens/s" not in forward and "higher is better" not in forward


def test_a_runs_rounds_pool_their_figures_and_a_failed_round_has_none(tmp_path):
    rounds = [generation_record(0, level=level, round_=index) for index, level in enumerate((1.0, 1.2, 0.9))]
    failed = generation_record(1, status="error")
    db = tmp_path / "h.sqlite"
    history("ingest", write(tmp_path / "r.jsonl", rounds + [failed]), "--db", db, check_rc=0)
    rows = list(csv.DictReader(io.StringIO(history("show", "--db", db, "--format=csv", check_rc=0).stdout)))
    assert [row["status"] for row in rows] == ["ok", "error"]
    # The run's figure: the median over its rounds of each round's median.
    pooled = statistics.median(expected(r)["ttft_ms"] for r in rounds)
    assert float(rows[0]["ttft_ms"]) == pytest.approx(pooled, rel=1e-5)
    assert all(rows[1][column] == "" for column in COLUMNS)


def test_ingesting_again_stores_nothing_new(nightly):
    db, results, records = nightly
    before = sqlite3.connect(db).execute("SELECT digest, figures FROM measurements ORDER BY id").fetchall()
    again = history("ingest", results, "--db", db, check_rc=0)
    assert f"0 record(s) added, {len(records)} already in the database" in again.stdout
    after = sqlite3.connect(db).execute("SELECT digest, figures FROM measurements ORDER BY id").fetchall()
    assert after == before
    stored = [json.loads(figures) for _, figures in before if figures]
    assert len(stored) == 6 and set(stored[0]) == {"time_to_first_token", "decode_per_token_time",
                                                   "decode_per_token_p90_time", "decode_tokens_per_second",
                                                   "generate_time", "compile_time"}
    assert sum(1 for _, figures in before if figures is None) == 3  # the forward model's: null


def decode_stepped(runs=30, step_at=17):
    """Qwen3's nightly runs where decoding slows by 30 % from run `step_at` while its prefill gets faster by as much
    time: the whole generate call (the time a forward model's history watches) stays as it was."""
    out = []
    for run in range(runs):
        noise = 1 + 0.01 * ((run * 7) % 5 - 2) / 2  # within +-1 %, the same for every figure of a run
        after = run >= step_at
        per_token = (0.026 if after else 0.020) * noise
        ttft = (1.0 - 15 * 0.006 if after else 1.0) * noise
        record = generation_record(run)
        total = [ttft + (NEW - 1) * per_token] * 3
        record["metrics"].update(time_to_first_token=[ttft] * 3, decode_per_token_time=[per_token] * 3,
                                 decode_per_token_p90_time=[per_token * 1.2] * 3,
                                 decode_tokens_per_second=[1 / per_token] * 3, total_time=total,
                                 per_iter_time=total, generate_time=total)
        out += [record, forward_record(run)]
    return out


def test_detect_finds_a_decode_slowdown_the_whole_generate_time_hides(tmp_path):
    db = tmp_path / "h.sqlite"
    history("ingest", write(tmp_path / "r.jsonl", decode_stepped()), "--db", db, check_rc=0)
    # on the time (the default), nothing moved
    assert json.loads(history("detect", "--db", db, "--format", "json", check_rc=0).stdout)["changes"] == []
    done = history("detect", "--db", db, "--format", "json", "--metric", "decode")
    assert done.returncode == 1, done.stderr  # slower: --fail-on's default
    [change] = json.loads(done.stdout)["changes"]
    assert change["direction"] == "slower" and QWEN in change["config"]  # the forward model has no decode figure
    assert (change["before"]["commit"], change["after"]["commit"]) == ("c16", "c17")
    assert change["ratio"] == pytest.approx(1.3, rel=0.03)  # a rate by its inverse: 50 tokens/s to 38.5
    text = history("detect", "--db", db, "--metric", "decode_tokens_per_second").stdout
    assert "on decode_tokens_per_second (a rate, judged by its inverse" in text and "1 change(s) in 1 config(s)" in text
    faster = json.loads(history("detect", "--db", db, "--format", "json", "--metric", "ttft", check_rc=0).stdout)
    assert [c["direction"] for c in faster["changes"]] == ["faster"]


def test_detect_on_a_figure_no_selected_config_has_is_bad_news(tmp_path):
    db = tmp_path / "h.sqlite"
    history("ingest", write(tmp_path / "r.jsonl", [forward_record(run) for run in range(3)]), "--db", db, check_rc=0)
    done = history("detect", "--db", db, "--metric", "decode", check_rc=1)
    assert "no selected config has decode_tokens_per_second" in done.stderr and "Traceback" not in done.stderr
    assert history("detect", "--db", db, "--metric", "tokens", check_rc=2).stderr.count("\n") <= 2


def test_detect_metric_words_are_metric_words():
    from benchmarks.history import cli
    from benchmarks.results import metric_catalog, metric_words

    assert cli.TIME == metric_words.TIME and cli.DETECT_METRICS[1:] == metric_catalog.speedup_metrics()


def per_token_record(run, level=1.0):
    """A generate record with vLLM's and optimum-benchmark's per-token figures (child/generation.py) and the decode
    bandwidth (results/decode_bandwidth.py), each run's, three runs."""
    record = generation_record(run, level=level)
    itl = {"mean": 0.021, "p50": 0.020, "p90": 0.025, "p95": 0.027, "p99": 0.030, "stdev": 0.004}
    record["metrics"].update({f"inter_token_latency_{stat}": [level * v] * 3 for stat, v in itl.items()})
    record["metrics"].update(time_per_output_token=[level * 0.022] * 3, inter_token_latency_cv=[0.19, 0.2, 0.21],
                             time_to_first_token_p50=[level * 0.12], time_to_first_token_p99=[level * 0.1298],
                             decode_bytes_per_second=[2.4e9 / (level * 0.021)] * 3,
                             decode_bandwidth_fraction=[0.4 / level] * 3, p99_itl=[level * 0.0312],
                             median_itl=[level * 0.0201])
    return record


def test_the_per_token_figures_by_name_in_show_with_their_units_and_directions(tmp_path):
    db = tmp_path / "h.sqlite"
    records = [per_token_record(run) for run in range(3)]
    history("ingest", write(tmp_path / "r.jsonl", records), "--db", db, check_rc=0)
    wanted = {"tpot_ms": 22.0, "itl_mean_ms": 21.0, "itl_p50_ms": 20.0, "itl_p90_ms": 25.0, "itl_p95_ms": 27.0,
              "itl_p99_ms": 30.0, "itl_stdev_ms": 4.0, "itl_cv_pct": 20.0, "ttft_p50_ms": 120.0, "ttft_p99_ms": 129.8,
              "decode_gb_per_s": 2.4 / 0.021, "decode_bandwidth_pct": 40.0,
              "p99_itl_ms": 31.2, "median_itl_ms": 20.1}  # vLLM's pooled figures, by vLLM's names
    rows = list(csv.DictReader(io.StringIO(history("show", "--db", db, "--format=csv", check_rc=0).stdout)))
    assert len(rows) == 3
    for column, value in wanted.items():
        assert float(rows[0][column]) == pytest.approx(value, rel=1e-5), column
    assert rows[0]["ttft_p90_ms"] == ""  # a figure the record lacks is empty, not made up
    shown = json.loads(history("show", "--db", db, "--format=json", check_rc=0).stdout)
    run = shown["configs"][0]["runs"][0]
    for column, value in wanted.items():
        assert run[column] == pytest.approx(value, rel=1e-5), column
    directions = shown["directions"]
    assert {directions[c] for c in ("tpot_ms", "itl_p99_ms", "itl_cv_pct", "ttft_p99_ms")} == {"lower is better"}
    assert directions["decode_gb_per_s"] == directions["decode_bandwidth_pct"] == "higher is better"


def test_detect_on_tpot_and_on_the_decode_bandwidth(tmp_path):
    records = [per_token_record(run, level=1.3 if run >= 17 else 1.0) for run in range(30)]
    db = tmp_path / "h.sqlite"
    history("ingest", write(tmp_path / "r.jsonl", records), "--db", db, check_rc=0)
    for metric in ("tpot", "time_per_output_token", "decode_bytes_per_second", "p99_itl"):
        done = history("detect", "--db", db, "--format", "json", "--metric", metric)
        [change] = json.loads(done.stdout)["changes"]
        assert change["direction"] == "slower" and change["ratio"] == pytest.approx(1.3, rel=0.03), metric
        assert (change["before"]["commit"], change["after"]["commit"]) == ("c16", "c17")
