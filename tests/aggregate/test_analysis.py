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


def quantized_results(path):
    """One model on a GPU in bf16: eager, Inductor, Inductor with two TorchAO recipes, eager with one (ms per iter)."""
    import json

    from benchmarks.config.experiment_config import ExperimentConfig

    def record(ms, dynamo, recipe=None):
        experiment = ExperimentConfig("cuda", None, dynamo, "eval", batch_size=8, precision="bf16", quantization=recipe,
                                      compile_mode="default" if dynamo else None, accelerator_model="NVIDIA H100")
        return {"model": {"suite_name": "huggingface", "model_name": "BertForMaskedLM"}, "status": "ok",
                "experiment": experiment.to_dict(), "timestamp": 1.0, "warmup": 1, "iterations_per_run": 1,
                "metrics": {"per_iter_time": [ms / 1e3] * 3, "warmup_time": [0.5]}}

    found = [record(8.0, None), record(4.0, "inductor"), record(2.0, "inductor", "int8wo"),
             record(1.0, "inductor", "int8dq"), record(6.0, None, "int8wo")]
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    return path


def test_across_quantization_takes_the_unquantized_model_under_the_same_backend_as_torchaos_baseline(tmp_path, capsys):
    path = quantized_results(tmp_path / "results.jsonl")
    backends = "inductor[bf16],inductor+int8wo[bf16],inductor+int8dq[bf16]"
    rows = aggregate_csv(capsys, path, "--report=latest_grouped", "--backends", backends, "--across", "quantization")
    head, model = rows[0], rows[1]
    speedup = {name: float(model[head.index(f"Speedup({name}/Oldest Inductor[bf16])")])
               for name in ("Inductor[bf16]", "inductor+int8wo[bf16]", "inductor+int8dq[bf16]")}
    assert speedup == {"Inductor[bf16]": 1.0, "inductor+int8wo[bf16]": 2.0, "inductor+int8dq[bf16]": 4.0}
    # without it each recipe's baseline is a config at its own quantization: here the recipe itself
    rows = aggregate_csv(capsys, path, "--report=latest_grouped", "--backends", backends)
    assert float(rows[1][rows[0].index("Speedup(inductor+int8wo[bf16]/Oldest Inductor[bf16])")]) == 1.0
    # the default baseline, eager, stays at each config's own quantization: eager+int8wo for inductor+int8wo
    rows = aggregate_csv(capsys, path, "--report=latest_grouped", "--backends", "eager[bf16],inductor+int8wo[bf16]")
    assert float(rows[1][rows[0].index("Speedup(inductor+int8wo[bf16]/Oldest Eager[bf16])")]) == 3.0
    # --across quantization from eager: each over unquantized eager in bf16
    rows = aggregate_csv(capsys, path, "--report=latest_grouped", "--backends", "eager[bf16],inductor+int8wo[bf16]",
                         "--across", "quantization")
    assert float(rows[1][rows[0].index("Speedup(inductor+int8wo[bf16]/Oldest Eager[bf16])")]) == 4.0


def test_across_names_the_rule_in_the_notes_and_refuses_what_it_cannot_mean(tmp_path, capsys):
    path = quantized_results(tmp_path / "results.jsonl")
    assert cli.main([str(path), "--format=table", "--report=latest_grouped", "--backends",
                     "inductor[bf16],inductor+int8wo[bf16]", "--across", "quantization"]) == 0
    out = capsys.readouterr().out
    assert "where it is Inductor[bf16]'s own (quantization none; --across)" in out
    for argv, words in ((["--across", "quantizaton"], "--across: axis 'quantizaton': unknown; close matches: "
                                                      "quantization"),
                        (["--across", "compile_mode"], "--across: axis 'compile_mode': unknown"),
                        (["--across", "quantization", "--report=dashboard"], "the dashboard's figures are each "
                                                                             "config's against eager")):
        assert cli.main([str(path), *argv]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
