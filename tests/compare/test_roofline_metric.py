"""compare.py --metric=fraction_of_attainable (and achieved_flops_per_second): the roofline's per-run figures
(docs/roofline.md) are rates, compared by their inverse, so a fall in the fraction is a ratio above 1, as a slowdown
is; shown as the time taken over the time the roofline allows."""

import json

from helpers import RUN1, call_tool, hand_record

from benchmarks.compare import metrics


def side(path, fraction):
    lines = []
    for round_index in range(3):
        record = hand_record("mlp", None, RUN1, 0.01, 0.02, 100)
        record["round"] = round_index
        record["metrics"]["fraction_of_attainable"] = [fraction * f for f in (0.99, 1.0, 1.01)]
        record["metrics"]["achieved_flops_per_second"] = [fraction * 1e11 * f for f in (0.99, 1.0, 1.01)]
        lines.append(json.dumps(record) + "\n")
    path.write_text("".join(lines))
    return path


def test_a_fall_in_the_fraction_of_attainable_reads_as_a_slowdown(tmp_path):
    base, mine = side(tmp_path / "base.jsonl", 0.5), side(tmp_path / "mine.jsonl", 0.25)
    out = call_tool("compare.py", str(base), str(mine), "--metric=fraction_of_attainable").stdout
    assert "x the roofline's time" in out and "slower" in out and "2.000" in out
    out = call_tool("compare.py", str(base), str(mine), "--metric=achieved_flops_per_second").stdout
    assert "ms per GFLOP" in out and "slower" in out


def test_the_units():
    assert metrics.unit("fraction_of_attainable") == ("x the roofline's time", 1.0)
    assert metrics.unit("achieved_flops_per_second") == ("ms per GFLOP", 1e12)
