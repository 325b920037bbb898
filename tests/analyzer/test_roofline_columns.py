"""result_analyzer.py's CSV carries the roofline's per-run figures (docs/roofline.md): min/median/max/mean/std of
fraction_of_attainable and achieved_flops_per_second, empty for a record without them."""

import csv
import json

from helpers import RUN1, call_tool, hand_record


def test_the_csv_has_the_roofline_columns(tmp_path):
    with_roofline = hand_record("mlp", None, RUN1, 0.01, 0.02, 100)
    with_roofline["metrics"].update(fraction_of_attainable=[0.2, 0.25, 0.3], achieved_flops_per_second=[1e9, 2e9, 3e9])
    without = hand_record("cnn", None, RUN1, 0.01, 0.02, 100)
    (tmp_path / "results.jsonl").write_text(json.dumps(with_roofline) + "\n" + json.dumps(without) + "\n")
    call_tool("result_analyzer.py", f"--output-dirname={tmp_path}", check_rc=0)
    with open(tmp_path / "metric_report.csv", newline="", encoding="utf-8") as handle:
        rows = {row["model_name"]: row for row in csv.DictReader(handle)}
    assert float(rows["mlp"]["median_fraction_of_attainable"]) == 0.25
    assert float(rows["mlp"]["max_achieved_flops_per_second"]) == 3e9
    assert rows["cnn"]["median_fraction_of_attainable"] == ""
