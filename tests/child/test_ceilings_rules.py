"""Ceilings that mean their word (child/ceilings.py, plumbing/cpu_caches.py): the bandwidth ceiling streams arrays of
at least 4x the last-level caches the run uses (every instance counted, as sysfs lays them out); a dtype whose best
GEMM here is slower than float32's gets no ceiling of its own, its configs held to float32's roof, saying so; a
ceiling cached by the earlier method is measured again, never trusted."""

import json
import os

import torch

from benchmarks.child import ceilings
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.plumbing import cpu_caches, user_cache
from benchmarks.results import roofline_figures


def experiment():
    return ExperimentConfig.from_dict({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval"})


def test_each_streaming_array_is_at_least_four_times_the_last_level_cache():
    for llc in (8 << 20, 32 << 20, 96 << 20):
        assert ceilings.stream_array_bytes("cpu", llc) >= 4 * llc  # before: 3/4 of it, 64 MiB at least
    assert ceilings.stream_array_bytes("cpu", 0) == ceilings.MIN_STREAM_BYTES


def cache_tree(root, cpu, index, level, kind, size, shared):
    folder = root / f"cpu{cpu}" / "cache" / f"index{index}"
    folder.mkdir(parents=True)
    for name, text in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
        (folder / name).write_text(f"{text}\n")


def test_every_last_level_cache_instance_the_cpus_use_is_counted_once(tmp_path):
    """Four CPUs, two L3 slices of 32 MiB (AMD's CCXs): 64 MiB, not the first CPU's slice only."""
    for cpu in range(4):
        cache_tree(tmp_path, cpu, 0, 1, "Data", "32K", str(cpu))
        cache_tree(tmp_path, cpu, 1, 1, "Instruction", "32K", str(cpu))
        cache_tree(tmp_path, cpu, 2, 2, "Unified", "512K", str(cpu))
        cache_tree(tmp_path, cpu, 3, 3, "Unified", "32768K", "0-1" if cpu < 2 else "2-3")
    instances = cpu_caches.sysfs_instances(str(tmp_path), [0, 1, 2, 3])
    assert instances == {(3, "0-1"): 32 << 20, (3, "2-3"): 32 << 20}
    assert cpu_caches.sysfs_instances(str(tmp_path), [0, 1]) == {(3, "0-1"): 32 << 20}  # only the slice it runs on


def test_this_machines_cache_is_read_and_named():
    nbytes, source = cpu_caches.last_level_cache()
    assert nbytes > 0 and source.split(":")[0] in ("sysfs", "lscpu", "assumed (neither sysfs nor lscpu names the "
                                                                        "caches)")


def test_a_dtype_slower_than_float32_has_no_ceiling_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv(user_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(ceilings, "GEMM_SIZES", (64, 128))
    monkeypatch.setattr(ceilings, "stream_array_bytes", lambda device, llc: 1 << 20)
    found = ceilings.for_config(experiment())
    peaks, slower = found["flops_per_second"], found["slower_than_float32"]
    assert set(peaks) | set(slower) == {"float32", "bfloat16"} and "float32" in peaks
    assert all(value >= peaks["float32"] for value in peaks.values())
    assert all(value < peaks["float32"] for value in slower.values())
    # held or not, the split is the measured GEMMs': a slow one is kept aside, never a roof
    split = ceilings.held_to_float32({"float32": 150e9, "bfloat16": 1.35e9})
    assert split == {"flops_per_second": {"float32": 150e9}, "slower_than_float32": {"bfloat16": 1.35e9}}
    figures = roofline_figures.figures(3.8e9, 1e9, [1.0], {**split, "bytes_per_second": 30e9}, "bfloat16")
    assert figures["peak_flops_per_second"] == 150e9 and figures["ceiling_dtype"] == "float32"
    assert "1.35 GFLOP/s" in figures["held_to_float32"]


def test_a_remeasurement_keeps_the_best_of_every_gemm_then_splits_again():
    before = {"flops_per_second": {"float32": 100e9}, "slower_than_float32": {"bfloat16": 2e9},
              "bytes_per_second": 30e9}
    now = {"flops_per_second": {"float32": 90e9, "bfloat16": 120e9}, "slower_than_float32": {},
           "bytes_per_second": 25e9}
    best = ceilings.best_of(before, now)
    assert best["flops_per_second"] == {"float32": 100e9, "bfloat16": 120e9} and best["bytes_per_second"] == 30e9
    assert ceilings.held_to_float32(best["flops_per_second"])["slower_than_float32"] == {}


def test_a_ceiling_cached_by_the_earlier_method_is_measured_again(tmp_path, monkeypatch):
    """Before this method, the cache held arrays of 64 MiB against any cache and a bfloat16 roof of a slow fallback:
    such a file, under the key it was written with, is not read."""
    monkeypatch.setenv(user_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(ceilings, "GEMM_SIZES", (64,))
    monkeypatch.setattr(ceilings, "stream_array_bytes", lambda device, llc: 1 << 20)
    old_facts = {**ceilings.key_facts("cpu"), "method": 1}
    stale = {**old_facts, "flops_per_second": {"float32": 1.0, "bfloat16": 1.0}, "bytes_per_second": 1.0}
    (tmp_path / ceilings.cache_path(old_facts).rsplit("/", 1)[1]).write_text(json.dumps(stale))
    found = ceilings.for_config(experiment())
    assert found["cached"] is False and found["method"] == ceilings.METHOD > 1
    assert found["flops_per_second"]["float32"] > 1.0 and found["threads"] == torch.get_num_threads()
    assert "x the last-level cache" in found["how"] and found["last_level_cache_source"]


def test_a_link_or_fifo_at_the_ceilings_cache_is_never_read(tmp_path):
    """A ceilings file is a claim: a link planted at its name (forged figures elsewhere) or a FIFO (a read that would
    block the child for ever) is ignored and the ceilings measured again; a regular file of ours is read."""
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"flops_per_second": {"float32": 1e30}}))
    link = tmp_path / "link.json"
    link.symlink_to(forged)
    assert ceilings.read(str(link)) is None
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert ceilings.read(str(fifo)) is None  # returns at once: never opened for reading
    assert ceilings.read(str(forged))["flops_per_second"] == {"float32": 1e30}
