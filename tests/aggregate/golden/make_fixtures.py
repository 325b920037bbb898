#!/usr/bin/env python3
"""Writes the aggregate.py fixtures in this directory (run it after changing a number here).

Numbers are chosen so the reports can be worked out by hand; the comments give the expected values,
and tests/aggregate/test_aggregate.py recomputes several of them with numpy from the formulas.

- upstream_v100.jsonl: upstream PyTorch/XLA's older schema (experiment_name, outputs_file, no torch_xla2,
  no status, no warm-up): the first 3 samples of each record are skipped, as upstream aggregate does.
- upstream_others.jsonl: A6000 training, A100 and an RTX A1000 (which `--accelerator=a100` must not
  pick) inference, in one file, with an upstream SKIP record.
- ours_cpu.jsonl: our schema (warm-up recorded apart, `status`), CPU, dummy suite, plus a TPU sweep in
  the same file; failures of every kind, one with partial samples that must never be averaged.
- special/: a torn last line, a file that is not JSON lines.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

V100 = "One of Tesla V100-SXM2-16GB, Tesla V100-SXM2-16GB"
T1 = 1700000000.5  # 2023-11-14 22:13:20.500000
T2 = 1700086400  # 2023-11-15 22:13:20
T3 = 1700172800  # 2023-11-16 22:13:20
CPU = "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
TPU = "v5litepod-8"
T4 = 1750000000  # 2025-06-15 15:06:40
T5 = 1750086400.25  # 2025-06-16 15:06:40.250000

BACKENDS = {  # name -> (xla, dynamo)
    "eager": (None, None),
    "inductor": (None, "inductor"),
    "openxla+dynamo": ("PJRT", "openxla"),
    "openxla+lazytensor": ("PJRT", None),
    "aot_eager": (None, "aot_eager"),
}


def upstream(accel_model, model, backend, test, batch_size, total_time, ts, error=None):
    xla, dynamo = BACKENDS[backend]
    metrics = {"error": error} if error else {"total_time": total_time, "per_iter_time": total_time}
    return {
        "model": {"suite_name": "torchbench", "model_name": model},
        "experiment": {"experiment_name": "run_all", "accelerator": "cuda", "accelerator_model": accel_model,
                       "xla": xla, "xla_flags": None, "dynamo": dynamo, "test": test, "batch_size": batch_size},
        "repeat": len(total_time) if total_time else 4, "iterations_per_run": 1, "metrics": metrics,
        "outputs_file": None, "timestamp": ts,
    }


def upstream_v100():
    u = lambda *a, **k: upstream(V100, *a, **k)  # noqa: E731
    return [
        # --- T1, eval. Baseline inductor (oldest): alexnet 0.2, BERT 0.1 (mean; sample std 0.0141421356),
        # resnet50 bs8 0.3 and bs64 2.0, hf_T5 only at T2 (0.5), dlrm none.
        u("alexnet", "inductor", "eval", 32, [9, 1, 1, 0.2, 0.2], T1),
        u("alexnet", "openxla+dynamo", "eval", 32, [9, 1, 1, 0.4, 0.4], T1),  # 0.5
        u("alexnet", "openxla+lazytensor", "eval", 32, [9, 1, 1, 0.5], T1),  # 0.4, one steady sample
        u("alexnet", "eager", "eval", 32, [1, 1, 1, 0.8, 0.8], T1),  # eager only at T1
        u("BERT_pytorch", "inductor", "eval", 16, [9, 1, 1, 0.09, 0.11], T1),  # 1.0 +- 0.2
        u("BERT_pytorch", "openxla+dynamo", "eval", 16, [9, 1, 1, 0.05, 0.05], T1),  # 2.0 +- 0.28284271
        u("BERT_pytorch", "openxla+lazytensor", "eval", 16, None, T1,
          error="Traceback (most recent call last):\nRuntimeError: lazy tensor lowering failed"),  # failed
        u("resnet50", "inductor", "eval", 8, [9, 1, 1, 0.3, 0.3], T1),
        u("resnet50", "inductor", "eval", 64, [9, 1, 1, 2.0, 2.0], T1),
        u("resnet50", "openxla+dynamo", "eval", 8, [9, 1, 1, 0.15, 0.15], T1),  # 2.0
        u("resnet50", "openxla+dynamo", "eval", 64, [9, 1, 1, 4.0, 4.0], T1),  # 0.5 -> geomean 1.0
        u("hf_T5", "inductor", "eval", 4, None, T1),  # total_time null: upstream crashes on these
        u("hf_T5", "openxla+dynamo", "eval", 4, [9, 1, 1, 1.0, 1.0], T1),  # 0.5 against T2's inductor
        u("dlrm", "inductor", "eval", 1024, [9, 1, 1], T1),  # 3 samples, all skipped: no data
        u("dlrm", "openxla+dynamo", "eval", 1024, [9, 1, 1, 0.01, 0.01], T1),  # no baseline, ever
        # T1 geomeans: Inductor (1, 1, 1) = 1.0 +- 0.2/3 = 0.06666667;
        # XLA+Dynamo (0.5, 2, 1, 0.5) = 0.5**0.25 = 0.84089642 +- g/4*0.14142136 = 0.02973018;
        # XLA+LazyTensor (0.4) = 0.4.
        # --- T2, eval.
        u("alexnet", "inductor", "eval", 32, [9, 1, 1, 0.1, 0.1], T2),  # 2.0
        u("alexnet", "openxla+dynamo", "eval", 32, [9, 1, 1, 0.25, 0.25], T2),  # 0.8
        u("alexnet", "openxla+lazytensor", "eval", 32, [9, 1, 1, 0.4, 0.4], T2),  # 0.5
        u("BERT_pytorch", "inductor", "eval", 16, [9, 1, 1, 0.08, 0.08], T2),  # 1.25 +- 0.1767767
        # (no BERT_pytorch openxla+dynamo record at T2: missing)
        u("resnet50", "inductor", "eval", 8, [9, 1, 1, 0.3, 0.3], T2),
        u("resnet50", "inductor", "eval", 64, [9, 1, 1, 2.0, 2.0], T2),  # 1.0
        u("resnet50", "openxla+dynamo", "eval", 8, [9, 1, 1, 0.1, 0.1], T2),  # 3.0
        u("resnet50", "openxla+dynamo", "eval", 64, [9, 1, 1, 2.5, 2.5], T2),  # 0.8 -> sqrt(2.4) = 1.54919334
        u("hf_T5", "inductor", "eval", 4, [9, 1, 1, 0.5, 0.5], T2),  # 1.0
        u("hf_T5", "openxla+dynamo", "eval", 4, [9, 1, 1, 0.25, 0.25], T2),  # 2.0
        u("dlrm", "openxla+dynamo", "eval", 1024, [9, 1, 1, 0.02, 0.02], T2),  # no baseline
        # T2 geomeans: Inductor (2, 1.25, 1, 1) = 2.5**0.25 = 1.25743343 +- g/4*0.14142136 = 0.04445699;
        # XLA+Dynamo (0.8, 1.54919334, 2) = 2.47870934**(1/3) = 1.35334504 +- 0; XLA+LazyTensor 0.5.
        # --- training; compile metric (first - mean of the rest): inductor BERT T1 9 - 0.65 = 8.35.
        u("BERT_pytorch", "inductor", "train", 16, [9, 1, 1, 0.3, 0.3], T1),
        u("BERT_pytorch", "openxla+dynamo", "train", 16, [20, 1, 1, 0.6, 0.6], T1),  # exec 0.5, compile 19.2
        u("alexnet", "inductor", "train", 32, [9, 1, 1, 0.4, 0.4], T1),
        u("alexnet", "openxla+dynamo", "train", None, None, T1),  # null total_time, null batch size
        u("BERT_pytorch", "inductor", "train", 16, [7, 1, 1, 0.25, 0.25], T2),  # exec 1.2, compile 6.375
        u("BERT_pytorch", "openxla+dynamo", "train", 16, [12, 1, 1, 0.5, 0.5], T2),  # exec 0.6, compile 11.25
        u("alexnet", "inductor", "train", 32, [9, 1, 1, 0.2, 0.2], T2),  # exec 2.0
        u("alexnet", "openxla+dynamo", "train", None, None, T2),
    ]


def upstream_others():
    a6000 = "One of Quadro P1000, NVIDIA RTX A6000"
    a100 = "NVIDIA A100-SXM4-40GB"
    a1000 = "NVIDIA RTX A1000 6GB Laptop GPU"
    return [
        upstream(a6000, "BERT_pytorch", "inductor", "train", 16, [9, 1, 1, 0.2, 0.2], T3),
        upstream(a6000, "BERT_pytorch", "openxla+dynamo", "train", 16, [9, 1, 1, 0.1, 0.1], T3),  # 2.0
        upstream(a6000, "Background_Matting", "inductor", "train", 4, [9, 1, 1, 0.5, 0.5], T3),
        upstream(a6000, "Background_Matting", "openxla+dynamo", "train", None, None, T3, error="SKIP"),
        upstream(a100, "alexnet", "inductor", "eval", 32, [9, 1, 1, 0.1, 0.1], T3),
        upstream(a100, "alexnet", "openxla+dynamo", "eval", 32, [9, 1, 1, 0.2, 0.2], T3),  # 0.5
        upstream(a1000, "alexnet", "inductor", "eval", 32, [9, 1, 1, 0.3, 0.3], T3),
        upstream(a1000, "alexnet", "openxla+dynamo", "eval", 32, [9, 1, 1, 0.1, 0.1], T3),  # 3.0
    ]


def ours(accel, accel_model, model, backend, test, ts, total_time=None, warmup_time=None, status="ok",
         iterations=1, batch_size=16, error=None):
    xla, dynamo = BACKENDS[backend]
    metrics = {}
    if warmup_time is not None:
        metrics["warmup_time"] = warmup_time
    if total_time is not None:
        metrics["total_time"] = total_time
        metrics["per_iter_time"] = [t / iterations for t in total_time]
    record_error = None
    if status != "ok":
        record_error = {"type": error[0], "message": error[1], "phase": error[2], "log": f"logs/{model}-{backend}.log"}
        metrics["error"] = f"SKIP: {error[1]}" if status == "skip" else f"{error[0]}: {error[1]}"
    return {
        "model": {"model_name": model, "suite_name": "dummy"},
        "experiment": {"accelerator": accel, "accelerator_model": accel_model, "xla": xla, "xla_flags": None,
                       "dynamo": dynamo, "torch_xla2": None, "test": test,
                       "batch_size": batch_size if status != "skip" else None, "enable_functionalization": False},
        "repeat": 5, "iterations_per_run": iterations, "metrics": metrics, "timestamp": ts,
        "verification_code": "VERIFIER_SKIPPED" if status == "ok" else "VERIFIER_DIDNT_RUN",
        "schema_version": 1, "status": status, "error": record_error, "warmup": 2, "requested_batch_size": None,
        "verify": False, "diagnostics": {}, "artifacts": {},
        "environment": {"python": "3.11.7", "torch": "2.9.1", "cpu_model": accel_model, "hostname": "fixture"},
    }


def ours_cpu():
    c = lambda *a, **k: ours("cpu", CPU, *a, **k)  # noqa: E731
    t = lambda *a, **k: ours("tpu", TPU, *a, **k)  # noqa: E731
    return [
        # --- T4. Baseline eager (oldest). mlp eager: median 0.011, MAD 0.001 -> spread 0.0014826;
        # its mean is 0.0286 (the 0.100 outlier), which --estimator=mean shows.
        c("mlp", "eager", "eval", T4, [0.010, 0.011, 0.012, 0.010, 0.100], warmup_time=[0.5, 0.011]),
        c("mlp", "inductor", "eval", T4, [0.005, 0.0055, 0.0045, 0.005, 0.005], warmup_time=[3.0, 0.006]),  # 2.2
        c("mlp", "aot_eager", "eval", T4, [0.008] * 5, warmup_time=[1.0, 0.008]),  # 1.375
        c("mlp", "openxla+dynamo", "eval", T4, status="crash",
          error=("Crash", "child killed by signal 11 (SIGSEGV)", "compile")),
        c("cnn", "eager", "eval", T4, [0.040] * 5, warmup_time=[0.2, 0.04], batch_size=8),
        # Failed mid-run with two samples measured: they must never be averaged.
        c("cnn", "inductor", "eval", T4, [0.001, 0.001], status="error", batch_size=8,
          error=("RuntimeError", "shape mismatch in run 3", "run")),
        c("cnn", "aot_eager", "eval", T4, status="timeout", batch_size=8,
          error=("Timeout", "no result after 1800 s", "compile")),
        c("multi_output", "eager", "eval", T4, [0.02] * 5, warmup_time=[0.1, 0.02]),
        c("multi_output", "inductor", "eval", T4, status="skip",
          error=("ModelSkipped", "multi_output does not compile with inductor here", "load")),
        # --- T5. mlp: eager 0.011/0.010 = 1.1 +- 0.14826; inductor median 0.004 (MAD 0) -> 2.75 +- 0.37065.
        c("mlp", "eager", "eval", T5, [0.010] * 5, warmup_time=[0.4, 0.010]),
        c("mlp", "inductor", "eval", T5, [0.004, 0.004, 0.004, 0.0042, 0.0038], warmup_time=[2.5, 0.005]),
        c("mlp", "aot_eager", "eval", T5, [0.011] * 5, warmup_time=[1.0, 0.011]),  # 1.0
        c("mlp", "openxla+dynamo", "eval", T5, [0.0055] * 5, warmup_time=[6.0, 0.006]),  # 2.0
        # A newer sweep with --iterations-per-run=2: per iteration 0.04 and 0.01 -> 1.0 and 4.0.
        c("cnn", "eager", "eval", T5, [0.08] * 5, warmup_time=[0.3, 0.08], iterations=2, batch_size=8),
        c("cnn", "inductor", "eval", T5, [0.02] * 5, warmup_time=[4.0, 0.02], iterations=2, batch_size=8),
        c("cnn", "aot_eager", "eval", T5, [0.05] * 5, warmup_time=[1.5, 0.05], batch_size=8),  # 0.8
        c("multi_output", "eager", "eval", T5, [0.02] * 5, warmup_time=[0.1, 0.02]),  # 1.0
        c("multi_output", "inductor", "eval", T5, [0.05] * 5, warmup_time=[5.0, 0.05]),  # 0.4: slower stays < 1
        # T5 geomeans (median): Eager (1.1, 1, 1) = 1.1**(1/3) = 1.03228012 +- g/3*0.13478182 = 0.04637753;
        # Inductor (2.75, 4, 0.4) = 4.4**(1/3) = 1.63864254 +- g/3*0.13478182 = 0.07361974.
        # --- training, T4 only.
        c("mlp", "eager", "train", T4, [0.03] * 5, warmup_time=[0.6, 0.03]),
        c("mlp", "inductor", "train", T4, [0.02] * 5, warmup_time=[9.0, 0.02]),  # 1.5
        c("cnn", "eager", "train", T4, [0.1] * 5, warmup_time=[0.5, 0.1], batch_size=8),
        c("cnn", "inductor", "train", T4, status="oom", batch_size=8,
          error=("MemoryError", "exceeded --subprocess-memory-limit 8G", "run")),
        # --- a TPU sweep in the same file: lazy tensors baseline 0.02, openxla+dynamo 0.01 -> 2.0.
        t("mlp", "openxla+lazytensor", "eval", T5, [0.02] * 5, warmup_time=[8.0, 0.02]),
        t("mlp", "openxla+dynamo", "eval", T5, [0.01] * 5, warmup_time=[6.0, 0.01]),
    ]


def write(path, records, torn=None):
    with open(os.path.join(HERE, path), "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
        if torn:
            handle.write(torn)


def main():
    os.makedirs(os.path.join(HERE, "special"), exist_ok=True)
    write("upstream_v100.jsonl", upstream_v100())
    write("upstream_others.jsonl", upstream_others())
    write("ours_cpu.jsonl", ours_cpu())
    # A sweep killed while appending: the last line is cut short (and has no newline).
    write("special/torn.jsonl", ours_cpu()[9:13], torn=json.dumps(ours_cpu()[13])[:90])
    with open(os.path.join(HERE, "special", "not_jsonl.txt"), "w", encoding="utf-8") as handle:
        handle.write("model,backend,speedup\nmlp,inductor,2.0\n")


if __name__ == "__main__":
    main()
