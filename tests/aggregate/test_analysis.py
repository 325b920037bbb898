"""One speedup per page: every table of an aggregate.py report takes a config's speedup over the baseline backend at
the same precision (and other shared axes), as the dashboard and the end-of-sweep table do. Records at two
precisions (fp32, bf16) from test_dashboard's hand-written results; aggregate's main runs in this process."""

import csv
import io
import math

import pytest

from benchmarks.aggregate import cli
from test_dashboard import EAGER, EAGER_BF16, INDUCTOR_BF16, INDUCTOR_RUN2, write_results


def column(head: list, backend: str) -> int:
    return head.index(f"Speedup({backend}/Oldest Eager)")


def aggregate_csv(capsys, *argv) -> list:
    status = cli.main(["--format=csv"] + [str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == 0, err
    return list(csv.reader(io.StringIO(out[2:])))  # the header line starts with "# "


def geomean(values) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_every_table_takes_the_baseline_at_the_same_precision(tmp_path, capsys):
    path = write_results(tmp_path / "results.jsonl")
    rows = aggregate_csv(capsys, path, "--report=latest_grouped")
    head, by_model = rows[0], {row[0]: row for row in rows[1:]}
    bf16 = column(head, "Inductor[bf16]")
    # alpha at bf16: eager bf16 0.008 s / inductor bf16 0.002 s = 4.0 (not 0.010 / 0.002 = 5.0, fp32 eager's).
    for model in INDUCTOR_BF16:
        assert float(by_model[model][bf16]) == pytest.approx(EAGER_BF16[model][0] / INDUCTOR_BF16[model][0])
    assert float(by_model["GEOMEAN"][bf16]) == pytest.approx(
        geomean([EAGER_BF16[m][0] / INDUCTOR_BF16[m][0] for m in INDUCTOR_BF16]))
    # eager bf16 is its own baseline, as on the dashboard (its speedup 1 by definition)
    assert float(by_model["GEOMEAN"][column(head, "Eager[bf16]")]) == pytest.approx(1.0)
    fp32 = column(head, "Inductor")
    timed = [m for m, v in INDUCTOR_RUN2.items() if v[0] is not None]
    assert float(by_model["GEOMEAN"][fp32]) == pytest.approx(geomean([EAGER[m][0] / INDUCTOR_RUN2[m][0] for m in timed]))

    # The dashboard's Inductor bf16 line (every config passes, so its speedup is over the same configs) agrees.
    dashboard = list(csv.DictReader(io.StringIO("\n".join(",".join(r) for r in aggregate_csv(
        capsys, path, "--report=dashboard")))))
    (line,) = [r for r in dashboard if r["Backend"] == "Inductor" and r["precision"] == "bf16"
               and r["Datetime(UTC)"] == dashboard[-1]["Datetime(UTC)"]]
    assert float(line["GeomeanSpeedup"]) == pytest.approx(float(by_model["GEOMEAN"][bf16]))


def test_a_baseline_left_out_of_backends_still_serves_its_precision(tmp_path, capsys):
    """--backends eager inductor[bf16]: bf16's baseline is eager at bf16, read though not shown."""
    path = write_results(tmp_path / "results.jsonl")
    rows = aggregate_csv(capsys, "--report=latest_grouped", "--backends", "eager", "inductor[bf16]", "--", path)
    head, by_model = rows[0], {row[0]: row for row in rows[1:]}
    assert not any("Eager[bf16]" in name for name in head)
    assert float(by_model["alpha"][column(head, "Inductor[bf16]")]) == pytest.approx(
        EAGER_BF16["alpha"][0] / INDUCTOR_BF16["alpha"][0])
