"""aggregate.py's roofline in the HTML page (aggregate/roofline_report.py): the newest run's records with a `roofline`
are a table (FLOPs, bytes, intensity, achieved GFLOP/s, bound, fraction, or why there is none) and a log-log plot with
a point per model and backend and the ceilings drawn; a page from records without one has no such section."""

import json
import re

from helpers import RUN1, call_tool, hand_record
from benchmarks.results import roofline_figures

CEILINGS = {"flops_per_second": {"float32": 100e9, "bfloat16": 400e9}, "bytes_per_second": 10e9,
            "cache_bytes_per_second": 50e9, "last_level_cache_bytes": 1 << 20}


def with_roofline(record, flops, nbytes, why_not=None, ceilings=CEILINGS, dtype="float32"):
    seconds = record["metrics"]["per_iter_time"]
    figures = roofline_figures.figures(flops, nbytes, seconds, ceilings, dtype)
    figures.pop("per_repeat", None)
    if why_not:
        figures.pop(roofline_figures.FRACTION, None)
        figures["why_not"] = why_not
    record["roofline"] = {"flops_per_iteration": flops, "bytes_per_iteration": nbytes, **figures}
    record["environment"] = {"ceilings": ceilings}
    return record


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_page_shows_each_configs_roofline_and_plots_the_points(tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [with_roofline(hand_record("mlp", None, RUN1, 0.010, 0.02, 100), 2e8, 4e7),
                    with_roofline(hand_record("mlp", "inductor", RUN1, 0.004, 1.0, 100), 2e8, 4e7),
                    with_roofline(hand_record("cnn", None, RUN1, 0.010, 0.02, 100), 1e9, 1e6,
                                  why_not="XLA configs: FlopCounterMode does not see lazy tensors' operations"),
                    hand_record("multi_output", None, RUN1, 0.010, 0.02, 100)])
    page = tmp_path / "page.html"
    call_tool("aggregate.py", str(results), "--accelerator=cpu", "--format=html", f"--output={page}", check_rc=0)
    html = page.read_text()
    section = html[html.index('<h2 id="roofline">'):]
    table = section[section.index('<tbody>'):section.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    assert len(rows) == 3  # the record without a roofline has no row
    # mlp eager: 2e8 FLOPs in 10 ms = 20 GFLOP/s, 5 FLOP/byte; memory-bound (4 ms of bytes > 2 ms of FLOPs): 0.4
    eager = next(r for r in rows if "mlp" in r and "Eager" in r)
    assert ">20<" in eager and ">5<" in eager and "memory" in eager and ">0.4<" in eager
    assert "lazy tensors" in next(r for r in rows if "cnn" in r)
    plot = section[section.index('<div class="plot">'):]
    assert "<svg" in plot and "achieved FLOP/s" in plot and "float32 100 GFLOP/s" in plot and "memory 10 GB/s" in plot
    assert "bfloat16" not in plot  # no point ran in bfloat16: its roof is not drawn under the float32 points


def test_a_dtype_slower_than_float32_is_held_to_float32s_roof_and_its_own_is_not_drawn(tmp_path):
    """bfloat16 without a fast kernel: its 1.35 GFLOP/s GEMM is no roof; its configs sit under float32's."""
    slow = {**CEILINGS, "flops_per_second": {"float32": 100e9}, "slower_than_float32": {"bfloat16": 1.35e9}}
    record = with_roofline(hand_record("mlp", None, RUN1, 0.010, 0.02, 100), 3.8e7, 1e6, ceilings=slow,
                           dtype="bfloat16")  # 3.8 GFLOP/s: above the slow GEMM, under float32's roof
    assert record["roofline"]["ceiling_dtype"] == "float32" and record["roofline"]["peak_flops_per_second"] == 100e9
    assert "held to float32's roof" in record["roofline"]["held_to_float32"]
    assert abs(record["roofline"]["fraction_of_attainable"] - 3.8e9 / 100e9) < 1e-12
    results, page = tmp_path / "results.jsonl", tmp_path / "page.html"
    write(results, [record])
    call_tool("aggregate.py", str(results), "--accelerator=cpu", "--format=html", f"--output={page}", check_rc=0)
    html = page.read_text()
    plot = html[html.index('<div class="plot">'):html.index('id="roofline-table"')]
    assert "float32 100 GFLOP/s" in plot and "1.35" not in plot


def test_no_roofline_no_section(tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [hand_record("mlp", None, RUN1, 0.010, 0.02, 100), hand_record("mlp", "inductor", RUN1, 0.004, 1, 1)])
    page = tmp_path / "page.html"
    call_tool("aggregate.py", str(results), "--accelerator=cpu", "--format=html", f"--output={page}", check_rc=0)
    assert 'id="roofline"' not in page.read_text()
