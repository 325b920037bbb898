"""`faults`: models that fail on purpose, to check (and demonstrate) that one config's crash, hang,
leak or error never takes the sweep down. Each fails on its first forward call, unless noted."""

from benchmarks.suites import BenchmarkModel, Suite, model_config

MODELS = {
    "raise_on_load": "raises while the model is built (phase load)",
    "silent_exit": "exits with status 0 before handing back a record",
    "segfault": "dereferences a null pointer (killed by SIGSEGV)",
    "hang": "sleeps for an hour (a timeout)",
    "sleepy": "sleeps 0.5 s per forward and trains (works; make bench-parallel's model: it waits, using no core)",
    "memory_hog": "allocates 256 MiB more every 50 ms, up to 12 GiB (an oom with --subprocess-memory-limit)",
    "random_output": "adds fresh noise to its output: eager runs never agree (works, but nondeterministic)",
    "graph_break": "a data-dependent branch breaks dynamo's graph; torch.median falls back to the CPU on XLA (works)",
    "falls_back_to_eager": "dynamo gives up on a frame it calls (a graph break in a try block): two graph breaks "
                           "and one fallback to eager in dynamo_stats (works)",
    "mixed_dtypes": "bfloat16, float16 and integer inputs (works; upstream's --randomize-input crashed on it)",
    "unseeded_noise": "random_output's noise, not declared non-deterministic (--verify: NONDETERMINISTIC_EAGER_RUN)",
    "third_call_raises": "works twice per instance, then raises (--verify --warmup=1 --repeat=1: fails after timing)",
    "structure_differs": "its output dict gains a key under dynamo (--verify: a structure mismatch, FAIL)",
    "refuses_float64": "raises on float64 inputs (works; --verify: no fp64 reference, judged by cosine similarity)",
    "elementwise_chain": "sin and scalings in a chain, which Inductor fuses into one float32 kernel (works; under bf16 "
                         "its result differs from eager's, which rounds after every operation)",
    "big_buffer": "holds a 64 MiB buffer it reads every forward (works; peak_memory_bytes shows it above baseline)",
    "heap_buffers": "holds 48 MiB in 768 small buffers, in the heap where freed memory is reused (works; its "
                    "peak_memory_bytes is the same with and without --verify)",
    "first_eager_run_raises": "the second instance built in the process raises in forward (--verify builds the "
                              "config's model first, then eager's: its first reference run, eager_1st_run_fail; "
                              "the config's own works)",
    "second_eager_run_raises": "the third instance built in the process raises in forward (--verify: eager's "
                               "second reference run, eager_2nd_run_fail)",
    "listed_non_deterministic": "works; on the rule's non-deterministic test list (config/harness_accuracy.yaml "
                                "own_suites): a fail_accuracy counts as pass, as the harness does",
    "listed_unchecked": "works; on the rule's large-model test list: --verify gives pass_due_to_skip, unchecked",
    "drifts_when_armed": "works; with drift in BENCHMARKS_FAULTS_ARMED its output is 1 % off when dynamo compiles it "
                         "(--verify: fail_accuracy)",
    "crashes_when_armed": "works; with crash in BENCHMARKS_FAULTS_ARMED its forward segfaults (a crash record)",
    "mask_differs_a_little": "works; scores and a boolean mask of 4096 elements, 4 of them flipped when dynamo "
                             "compiles it (--verify: pass, the mask judged by overlap, IoU >= 0.99)",
    "mask_differs_a_lot": "works; scores and a boolean mask, a quarter of it flipped when dynamo compiles it "
                          "(--verify: fail_accuracy and FAIL, IoU < 0.99)",
    "page_churn": "writes a fresh 64 MiB buffer every forward, mapped and unmapped each time (works; its record warns "
                  "of heavy page faults)",
    "waits_for_a_lock": "works; with BENCHMARKS_FAULTS_LOCK naming a file another process holds locked, its forward "
                        "waits for the lock (a timeout record names the file and its holder)",
    "polls_for_a_lock": "works; with BENCHMARKS_FAULTS_LOCK naming a file another process holds locked, its forward "
                        "polls for it through filelock, as Inductor's cache locks do",
    "notes_the_profiler": "works; with BENCHMARKS_FAULTS_PROFILER_LOG naming a file, each forward appends its pid "
                          "and 1 to it when torch's profiler is active, else 0 (timed repeats run with none)",
    "counts_its_calls": "works; its output grows by 0.001 with every call (--deterministic: two runs differ, "
                        "fail_nondeterministic)",
    "no_deterministic_kernel": "works; scatters with Tensor.put_, which has no deterministic implementation "
                               "(--deterministic: an error record naming put_)",
    "row_wise": "works; element-wise operations only: each sample's output is its own at any batch size "
                "(--batch-invariant: pass)",
    "normalises_over_batch": "works; subtracts the batch's mean from each sample (--batch-invariant: "
                             "fail_batch_invariance at half the batch)",
    "cuda_out_of_memory": "CUDA only: asks the GPU for 64 TiB (torch.OutOfMemoryError: an oom record)",
    "cuda_device_assert": "CUDA only: indexes past a tensor's end, so a kernel's assert fires on the device (the "
                          "process's CUDA context is lost)",
    "cuda_illegal_address": "CUDA only: a Triton kernel stores far past its buffer (an illegal memory access; the "
                            "process's CUDA context is lost)",
}


SUITE_NAME = "faults"
DESCRIPTION = "models that fail on purpose (a crash, hang, leak or error never takes the sweep down)"
ORDER = 20


class FaultsSuite(Suite):
    name = SUITE_NAME

    def list_models(self, flags):
        return [model_config(self.name, name) for name in MODELS]

    def build(self, model_config, experiment, device, flags):
        import torch

        from benchmarks.suites import faults_models

        name = model_config["model_name"]
        if name == "raise_on_load":
            raise RuntimeError("raise_on_load: this model fails while it is built, on purpose")
        if name in faults_models.CUDA_ONLY and not str(device).startswith("cuda"):
            raise NotImplementedError(f"{name} is a fault of CUDA devices; this config runs on {device}")
        module = faults_models.MODELS[name]().to(device)
        batch_size = experiment.batch_size or 4
        generator = torch.Generator().manual_seed(0)
        make_inputs = getattr(module, "example_inputs", None)
        inputs = make_inputs(batch_size, generator) if make_inputs else (torch.randn(batch_size, 8, generator=generator),)
        inputs = tuple(tensor.to(device) for tensor in inputs)
        return BenchmarkModel(module=module, example_inputs=inputs, batch_size=batch_size,
                              deterministic=name != "random_output")


SUITE = FaultsSuite()
