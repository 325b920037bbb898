"""The profilers: torch.profiler (traces, operator tables, CPU/CUDA time metrics, per-operator figures), in
profiled repeats of their own after the timed ones (measured_loop.MeasuredLoop.profiled_repeat), and dynamo's
counters after each timed repeat. torch inside the functions."""

from __future__ import annotations

import contextlib
import json
from typing import Callable

from benchmarks.child import torch_internals


def _ops_table(events, keep: Callable[[str], bool], with_cuda: bool) -> dict:
    """op name -> figures of one profiled repeat (seconds, call count)."""
    table = {}
    for event in events:
        if not keep(event.key):
            continue
        row = {
            "self_cpu_time_s": event.self_cpu_time_total / 1e6,
            "total_cpu_time_s": event.cpu_time_total / 1e6,
            "num_of_calls": event.count,
        }
        if with_cuda:
            row["self_cuda_time_s"] = event.self_device_time_total / 1e6
            row["total_cuda_time_s"] = event.device_time_total / 1e6
        table[event.key] = row
    return table


def per_repeat_tables(tables: list) -> dict:
    """[op -> figures] per repeat -> op -> figure -> one value per repeat (0 where the op did not run)."""
    merged = {}
    for op in sorted({op for table in tables for op in table}):
        figures = list(next(t[op] for t in tables if op in t))
        merged[op] = {figure: [table.get(op, {}).get(figure, 0) for table in tables] for figure in figures}
    return merged


class TorchProfiler:
    """torch.profiler around each profiled repeat (one per timed repeat, after them all, so that no timed run is
    profiled): --dump-pytorch-profiles (trace and table files), --profile-cuda-cpu (time metrics),
    --profile-cuda-cpu-individual-ops (per-operator figures)."""

    def __init__(self, options, experiment, iterations: int, cuda: bool, files, metrics: dict):
        self.options = options  # the diagnostics section
        self.xla = bool(experiment.xla)
        self.iterations = iterations
        self.cuda = cuda
        self.files = files
        self.metrics = metrics
        self.op_tables: dict = {}  # diagnostics key -> one op table per repeat

    @contextlib.contextmanager
    def around(self, index: int):
        import torch.profiler as tp

        activities = [tp.ProfilerActivity.CPU] + ([tp.ProfilerActivity.CUDA] if self.cuda else [])
        with tp.profile(activities=activities) as prof:
            yield
        self._profiled(index, prof)

    def _profiled(self, index: int, prof) -> None:
        events = prof.key_averages()
        opts = self.options
        if opts.dump_pytorch_profiles:
            trace = self.files.path("trace", "json", index)
            prof.export_chrome_trace(trace)
            self.files.add_artifact("trace", trace, index)
            table = self.files.path("pytorch-profile", "txt", index)
            sort_by = "self_cuda_time_total" if self.cuda else "self_cpu_time_total"
            with open(table, "w", encoding="utf-8") as handle:
                handle.write(events.table(sort_by=sort_by, row_limit=-1) + "\n")
            self.files.add_artifact("pytorch-profile", table, index)
        if opts.profile_cuda_cpu:
            cpu = sum(event.self_cpu_time_total for event in events) / 1e6
            self.metrics["total_cpu_time_s"].append(cpu)
            self.metrics["per_iter_cpu_time_s"].append(cpu / self.iterations)
            if self.cuda:  # self device times: each kernel counted once
                cuda = sum(event.self_device_time_total for event in events) / 1e6
                self.metrics["total_cuda_time_s"].append(cuda)
                self.metrics["per_iter_cuda_time_s"].append(cuda / self.iterations)
        if opts.profile_cuda_cpu_individual_ops:
            if self.xla:
                import torch_xla.debug.metrics as met

                fallback = set(met.executed_fallback_ops())
                key, keep = "xla_unlowered_ops", fallback.__contains__
            else:
                key, keep = "aten_ops", lambda name: name.startswith("aten::")
            self.op_tables.setdefault(key, []).append(_ops_table(events, keep, self.cuda))

    def finish(self, diagnostics: dict) -> None:
        for key, tables in self.op_tables.items():
            diagnostics[key] = per_repeat_tables(tables)


def counters_snapshot() -> dict:
    from torch._dynamo.utils import counters

    return {category: dict(values) for category, values in counters.items() if values}


class DynamoCounters:
    """dynamo's counters after each timed repeat (always for dynamo configs: the graph metrics), and
    --collect-dynamo-counters / --dump-dynamo-counters."""

    def __init__(self, options, files, metrics: dict):
        self.options = options  # the diagnostics section
        self.files = files
        self.metrics = metrics
        self.snapshots: list = []

    def clear(self) -> None:
        with torch_internals.reading(torch_internals.DYNAMO_COUNTERS, "torch._dynamo.utils.counters"):
            from torch._dynamo.utils import counters

            counters.clear()

    def after_repeat(self) -> None:
        # dynamo's internals: a torch that moved them costs these metrics (the record's `absent` says why)
        snapshot = torch_internals.read(torch_internals.DYNAMO_COUNTERS, "torch._dynamo.utils.counters",
                                        counters_snapshot)
        if snapshot is None:
            return
        self.snapshots.append(snapshot)
        self.metrics["dynamo_graph_count"].append(snapshot.get("stats", {}).get("unique_graphs", 0))
        self.metrics["dynamo_graph_break_count"].append(sum(snapshot.get("graph_break", {}).values()))

    def finish(self, diagnostics: dict) -> None:
        if self.snapshots and self.options.collect_dynamo_counters:
            diagnostics["dynamo_counters"] = self.snapshots[-1]
        if self.snapshots and self.options.dump_dynamo_counters:
            path = self.files.path("dynamo-counters", "json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"per_repeat": self.snapshots}, handle, indent=1, ensure_ascii=False)
            self.files.add_artifact("dynamo-counters", path)
