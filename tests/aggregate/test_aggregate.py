"""aggregate.py: numbers against upstream's formulas and hand-worked values, images, CLI behaviour.

The golden files (test_aggregate_golden.py, over golden/) pin whole reports; here a few numbers are recomputed
independently, with numpy only, from upstream aggregate.py's definitions.
"""

import json
import math
import os
import pty
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from helpers import GOLDEN, ROOT, call_tool

FIXTURES = str(GOLDEN)
AGGREGATE = os.path.join(ROOT, "aggregate.py")
V100_FILE = os.path.join(FIXTURES, "upstream_v100.jsonl")
ALL_FILES = sorted(os.path.join(FIXTURES, f) for f in os.listdir(FIXTURES) if f.endswith(".jsonl"))


def run_cli(*args, cwd=FIXTURES, text=True):
    return call_tool("aggregate.py", *args, cwd=cwd, text=text)


def csv_table(text: str) -> list:
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    return [[None if cell == "" else cell for cell in line.split(",")] for line in lines[1:]]


# ---------------------------------------------------------------- upstream's formulas, written out again


def upstream_backend(experiment: dict) -> str:
    if experiment["dynamo"] == "inductor":
        return "inductor"
    if experiment["xla"] == "PJRT":
        return "openxla+dynamo" if experiment["dynamo"] == "openxla" else "openxla+lazytensor"
    return "eager"


def upstream_geomean(points):
    values = np.array([p[0] for p in points])
    g = float(np.exp(np.log(values).mean()))
    return g, g / len(points) * math.sqrt(sum((e / v) ** 2 for v, e in points))


def upstream_speedup_report(path: str, test: str, backends: list) -> dict:
    """{timestamp: {backend: (geomean, error)}} as upstream aggregate.py defines them for --metric=exec."""
    data = {}
    with open(path) as handle:
        for line in handle:
            record = json.loads(line)
            experiment = record["experiment"]
            times = record["metrics"].get("total_time")
            if experiment["test"] != test or not times or len(times) <= 3:
                continue
            steady = np.array(times[3:])
            point = (steady.mean(), steady.std(ddof=1) if len(steady) > 1 else 0.0)
            data.setdefault(record["timestamp"], {}).setdefault(upstream_backend(experiment), {}).setdefault(
                record["model"]["model_name"], {})[experiment["batch_size"]] = point
    baseline = {}
    for ts in sorted(data):
        for model, sizes in data[ts].get(backends[0], {}).items():
            for size, point in sizes.items():
                baseline.setdefault(model, {}).setdefault(size, point)
    report = {}
    for ts in sorted(data):
        for backend in backends:
            per_model = []
            for model, sizes in data[ts].get(backend, {}).items():
                pairs = []
                for size, (a, sa) in sizes.items():
                    if size in baseline.get(model, {}):
                        b, sb = baseline[model][size]
                        s = b / a
                        pairs.append((s, s * math.sqrt((sa / a) ** 2 + (sb / b) ** 2)))
                if pairs:
                    per_model.append(upstream_geomean(pairs))
            if per_model:
                report.setdefault(ts, {})[backend] = upstream_geomean(per_model)
    return report


def test_mean_estimator_equals_upstream_formulas():
    backends = ["inductor", "openxla+dynamo", "openxla+lazytensor"]
    expected = upstream_speedup_report(V100_FILE, "eval", backends)
    result = run_cli("--accelerator=v100", "--estimator=mean", "--backends", *backends, "--", V100_FILE)
    assert result.returncode == 0, result.stderr
    rows = csv_table(result.stdout)
    assert len(rows) == len(expected) == 2
    for row, ts in zip(rows, sorted(expected)):
        for i, backend in enumerate(backends):
            value, error = expected[ts][backend]
            assert float(row[1 + 2 * i]) == pytest.approx(value, abs=6e-9)
            assert float(row[2 + 2 * i]) == pytest.approx(error, abs=6e-9)


def test_mean_estimator_hand_computed_values():
    """Worked by hand from tests/aggregate/golden/make_fixtures.py: BERT_pytorch inductor at T1 samples 0.09, 0.11
    after the 3 skipped: mean 0.1, sample std 0.01*sqrt(2)."""
    std = math.sqrt(((0.09 - 0.1) ** 2 + (0.11 - 0.1) ** 2) / 1)
    rel = std / 0.1
    result = run_cli("--accelerator=v100", "--estimator=mean", "--backends", "inductor", "openxla+dynamo", "--",
                     V100_FILE)
    (t1, t2) = csv_table(result.stdout)
    assert t1[0] == "2023-11-14 22:13:20.500000" and t2[0] == "2023-11-15 22:13:20"
    # T1 inductor: alexnet 1, BERT 1 +- sqrt(2)*rel, resnet50 1 (hf_T5 null, dlrm 3 samples): error (1/3)*sqrt(2)*rel.
    assert float(t1[1]) == 1.0 and float(t1[2]) == pytest.approx(math.sqrt(2) * rel / 3, abs=6e-9)
    # T1 XLA+Dynamo: alexnet 0.5, BERT 2 +- 2*rel, resnet50 geomean(2, 0.5) = 1, hf_T5 0.5 (baseline from T2).
    g = 0.5 ** 0.25
    assert float(t1[3]) == pytest.approx(g, abs=6e-9)
    assert float(t1[4]) == pytest.approx(g / 4 * rel, abs=6e-9)
    # T2 inductor: 2, 1.25 +- 1.25*rel, 1, 1; XLA+Dynamo: 0.8, sqrt(3*0.8), 2 (BERT missing).
    assert float(t2[1]) == pytest.approx(2.5 ** 0.25, abs=6e-9)
    assert float(t2[2]) == pytest.approx(2.5 ** 0.25 / 4 * rel, abs=6e-9)
    assert float(t2[3]) == pytest.approx((0.8 * math.sqrt(2.4) * 2) ** (1 / 3), abs=6e-9)
    assert float(t2[4]) == 0.0


def test_compile_metric_is_the_first_run_as_in_compare():
    """--metric=compile is the metric word `compile` of every tool: the first run, compilation included
    (upstream records: the first timed sample), the same number compare.py's --metric=compile reads."""
    from benchmarks.compare import metrics
    from benchmarks.results import records
    from benchmarks.results.measurement import Measurement

    result = run_cli("--accelerator=v100", "--test=training", "--metric=compile", "--backends", "inductor",
                     "openxla+dynamo", "--", V100_FILE)
    (t1, t2) = csv_table(result.stdout)
    assert float(t1[3]) == pytest.approx(9 / 20, abs=6e-9)  # BERT: inductor's first run at T1 / openxla's
    assert float(t2[3]) == pytest.approx(9 / 12, abs=6e-9)
    firsts = {(m.backend, m.timestamp): metrics.metric_samples(m, "compile")[0]
              for m in map(Measurement, records.stream_records(V100_FILE))
              if m.model_name == "BERT_pytorch" and m.test == "train"}
    assert sorted(float(v[0]) for v in firsts.values()) == [7.0, 9.0, 12.0, 20.0]


def test_median_estimator_on_our_records():
    """Our records carry warm-up apart: no sample is skipped; spread = 1.4826 * MAD."""
    result = run_cli("--accelerator=cpu", "--report=latest_grouped", "--backends", "eager", "inductor", "--",
                     *ALL_FILES)
    assert result.returncode == 0, result.stderr
    rows = {row[0]: row for row in csv_table(result.stdout)}
    eager_t4 = np.array([0.010, 0.011, 0.012, 0.010, 0.100])
    base, base_spread = np.median(eager_t4), 1.4826 * np.median(np.abs(eager_t4 - np.median(eager_t4)))
    inductor_t5 = np.array([0.004, 0.004, 0.004, 0.0042, 0.0038])
    assert np.median(np.abs(inductor_t5 - np.median(inductor_t5))) == 0
    speedup = base / np.median(inductor_t5)
    assert float(rows["mlp"][3]) == pytest.approx(speedup, abs=6e-9)
    assert float(rows["mlp"][4]) == pytest.approx(speedup * base_spread / base, abs=6e-9)
    # cnn ran 2 iterations per timed run in the newer sweep: per iteration 0.04 / 0.01.
    assert float(rows["cnn"][3]) == 4.0
    # Slower than the baseline stays below 1.
    assert float(rows["multi_output"][3]) == 0.4
    assert float(rows["GEOMEAN"][3]) == pytest.approx((speedup * 4.0 * 0.4) ** (1 / 3), abs=6e-9)


def test_failed_records_are_never_averaged():
    from benchmarks.aggregate.analysis import Options, prepare

    options = Options(input_files=ALL_FILES, accelerator="cpu", backends=["eager", "inductor"])
    analysis = prepare(options)
    t4 = analysis.timestamps[0]
    cell = analysis.cell(t4, "inductor")
    by_name = {analysis.labels[w]: why for w, why in cell.left_out.items()}
    assert by_name == {"cnn": ("failed", "error"), "multi_output": ("skipped", None)}
    assert [analysis.labels[w] for w in cell.speedups] == ["mlp"]


# ---------------------------------------------------------------- images


def png_facts(data: bytes) -> dict:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    facts, offset = {"text": {}}, 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            facts["width"], facts["height"] = struct.unpack(">II", body[:8])
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            facts["text"][key.decode("latin-1")] = value.decode("latin-1")
        offset += 12 + length
    assert kind == b"IEND"
    return facts


@pytest.mark.parametrize("report", ["speedup", "latest"])
def test_png_is_valid_sane_and_titled(report):
    result = run_cli("--accelerator=v100", f"--report={report}", "--format=png", "--title=Nightly",
                     "--backends", "inductor", "openxla+dynamo", "--", *ALL_FILES, text=False)
    assert result.returncode == 0, result.stderr
    facts = png_facts(result.stdout)
    assert facts["width"] == 900 and facts["height"] == 675  # --fig-width 9 x --fig-height 6.75 at 100 dpi
    title = facts["text"]["Title"]
    assert "over oldest Inductor" in title and "Tesla V100" in title and "inference" in title and "Nightly" in title


@pytest.mark.parametrize("report", ["histogram", "latest_grouped"])
def test_svg_is_valid_sane_and_titled(report, tmp_path):
    out = tmp_path / "plot.svg"  # the format comes from the extension
    result = run_cli("--accelerator=cpu", f"--report={report}", f"--output={out}", "--fig-width=6",
                     "--fig-height=4", "--", *ALL_FILES)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # 6 x 4 inches at 72 pt per inch; grouped bars may grow the figure to fit every model.
    assert root.get("width") == "432pt" and 288 <= float(root.get("height").rstrip("pt")) <= 1000
    text = " ".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "over oldest Eager" in text and "Xeon" in text and "inference" in text
    assert "Inductor: 3 models" in text  # the notes on what each backend includes
    assert out.stat().st_size < 500_000


@pytest.mark.process  # its stdout is a terminal
def test_images_are_not_written_to_a_terminal():
    leader, follower = pty.openpty()
    try:
        result = subprocess.run([sys.executable, AGGREGATE, "--accelerator=cpu", "--format=png", *ALL_FILES],
                                stdout=follower, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert result.returncode == 2
    assert "use --output FILE" in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- command line


@pytest.mark.process  # what a fresh interpreter imports
def test_help_is_fast_and_light():
    code = ("import sys, time; t = time.perf_counter(); from benchmarks.aggregate import cli; "
            "heavy = [m for m in ('numpy', 'pandas', 'matplotlib') if m in sys.modules]; "
            "print(heavy, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.startswith("[] ")
    result = run_cli("--help")
    assert result.returncode == 0 and "--accelerator" in result.stdout and "--help-all" in result.stdout
    assert "--estimator" in run_cli("--help-all").stdout


def test_accelerator_must_be_chosen_when_the_files_hold_several():
    result = run_cli(*ALL_FILES)
    assert result.returncode == 2
    assert "several accelerators" in result.stderr and "--accelerator=all" in result.stderr
    assert run_cli("upstream_v100.jsonl").returncode == 0  # one accelerator: no choice to make


def test_accelerator_names():
    from benchmarks.results.selection import accelerator_regex

    assert accelerator_regex("a100").search("NVIDIA A100-SXM4-40GB")
    assert not accelerator_regex("a100").search("NVIDIA RTX A1000 6GB Laptop GPU")
    assert accelerator_regex("v100").search("One of Tesla V100-SXM2-16GB, ...")
    assert accelerator_regex("a6000").search("One of Quadro P1000, NVIDIA RTX A6000")
    assert accelerator_regex("xeon").search("Intel(R) Xeon(R) Processor")
    assert accelerator_regex("v5").search("v5litepod-8")
    assert accelerator_regex("H100|A100").search("NVIDIA H100 80GB HBM3")


def test_no_speedups_is_exit_1_with_the_reason():
    result = run_cli("--accelerator=tpu", "--backends", "eager", "openxla+dynamo", "--", *ALL_FILES)
    assert result.returncode == 1
    assert "no inference records for backend eager" in result.stderr
    assert "no speedups to report" in result.stderr
    assert "XLA+Dynamo: 0 models" in result.stderr and "1 no baseline (mlp)" in result.stderr


def test_odd_records_are_survived(tmp_path):
    good = [json.loads(line) for line in open(os.path.join(FIXTURES, "ours_cpu.jsonl"))][9:11]
    odd = [
        {"model": "mlp", "experiment": {}},  # wrong types
        {"model": {"model_name": "mlp"}, "experiment": {"test": "eval"}, "timestamp": "yesterday"},
        {"model": {"model_name": "mlp"}, "experiment": {"test": "eval", "batch_size": {"x": 1}}, "timestamp": 1e300},
        dict(good[0], metrics={"total_time": ["fast", None]}, timestamp=good[0]["timestamp"]),
        dict(good[0], metrics=[1, 2, 3]),
        dict(good[1], metrics={"total_time": [0.0, -1.0]}, experiment=dict(good[1]["experiment"], batch_size=99)),
        [1, 2],
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in odd + good) + "{not json\n")
    result = run_cli("--accelerator=cpu", "--report=latest_grouped", str(path))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "invalid JSON" in result.stderr and "not a JSON object" in result.stderr
    # The shared validation (results/record_check.py) names each refused record's line and reason.
    assert "odd.jsonl:1: unusable record: no model or experiment" in result.stderr
    assert "odd.jsonl:3: unusable record: experiment.batch_size is an object, not a whole number" in result.stderr
    assert "odd.jsonl:5: unusable record: metrics is a list, not an object" in result.stderr
    assert csv_table(result.stdout)[0][:4] == ["mlp", "1.0", "0.0", "2.5"]


def test_frame_gives_unique_column_names():
    from benchmarks.aggregate import reports
    from benchmarks.aggregate.analysis import Options

    table = reports.build(Options(input_files=[V100_FILE], accelerator="v100", report="latest",
                                  backends=["inductor", "openxla+dynamo"]))
    frame = table.frame()
    assert list(frame.columns)[:4] == ["Workload", "Speedup(Inductor/Oldest Inductor)", "StdDev",
                                       "ModelName(Inductor)"]
    assert frame.columns.is_unique and len(frame) == 4


def test_torchbench_tiers_select_upstream_names():
    from benchmarks.suites import suite_names

    if "torchbench" not in suite_names():
        pytest.skip("the torchbench suite (with upstream's tiers) is not in this tree")
    result = run_cli("--accelerator=v100", "--report=latest_grouped", "--filter-by-tier=1", "--backends", "inductor",
                     "--", V100_FILE)
    assert result.returncode == 0, result.stderr
    # dlrm (tier 1 too) has no inductor record in the newest run, so no row.
    assert [row[0] for row in csv_table(result.stdout)] == ["BERT_pytorch", "hf_T5", "GEOMEAN"]
