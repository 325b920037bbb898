"""The failing modules of the `faults` suite (child only)."""

import ctypes
import fcntl
import functools
import itertools
import os
import time

import torch
from torch import nn


class _Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)


class Segfault(_Base):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return self.fc(x)


class Hang(_Base):
    def forward(self, x):
        time.sleep(3600)
        return self.fc(x)


class Sleepy(_Base):
    SECONDS = 0.5

    def forward(self, x):
        time.sleep(self.SECONDS)  # waits, using no core: parallel sweeps can show their scheduling
        return torch.relu(self.fc(x))


class MemoryHog(_Base):
    def forward(self, x):
        hoard = []
        for _ in range(48):  # 48 x 256 MiB = 12 GiB at most, then it gives up
            hoard.append(torch.ones(64 * 1024 * 1024))  # written, so resident
            time.sleep(0.05)
        return self.fc(x)


class SilentExit(_Base):
    def forward(self, x):
        os._exit(0)


class RandomOutput(_Base):
    def forward(self, x):
        # Seeded from the OS, so even two runs under the same torch seed differ.
        noise = torch.rand(x.shape[0], 8, generator=torch.Generator().manual_seed(int.from_bytes(os.urandom(7), "little")))
        return torch.relu(self.fc(x)) + noise.to(x.device)


class GraphBreak(_Base):
    """Works everywhere, but dynamo breaks its graph at a data-dependent Python branch, and torch.median
    falls back to the CPU under PyTorch/XLA."""

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:  # data-dependent branch: a graph break (an error under fullgraph=True)
            y = y * 2
        return torch.relu(y - y.median())


def _doubled_in_a_try_block(y):
    """A frame dynamo gives up on (torch 2.9: a graph break inside a try block can't resume), run by Python."""
    try:
        y = y * 2
        torch._dynamo.graph_break()
    except ValueError:
        pass
    return y


class FallsBackToEager(_Base):
    """Works; dynamo captures its first and last operations but gives up on the frame of the function it calls (a
    graph break there that it can't resume from): two graph breaks (inlining the call, then the function's own
    frame) and one fallback to eager (dynamo_stats' graph_breaks and fallbacks_to_eager, as the harness counts)."""

    def forward(self, x):
        return torch.relu(_doubled_in_a_try_block(self.fc(x)))


class MixedDtypes(_Base):
    """Works: half-precision inputs (bfloat16, float16) beside integer indices."""

    @staticmethod
    def example_inputs(batch_size: int, generator) -> tuple:
        x = torch.randn(batch_size, 8, generator=generator)
        return x.bfloat16(), x.half(), torch.arange(batch_size - 1, -1, -1)

    def forward(self, x, y, index):
        return torch.relu(self.fc(x.float() + y.float()))[index]


class ThirdCallRaises(_Base):
    """Works for two calls, then raises: with --warmup=1 --repeat=1, --verify's own run of the config
    (after timing) is the third call, while each eager reference run builds a fresh one."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:
            raise RuntimeError("third_call_raises: this model fails from its third call on, on purpose")
        return torch.relu(self.fc(x))


class StructureDiffers(_Base):
    """Its output gains a key when dynamo compiles it (is_compiling() is true while dynamo traces)."""

    def forward(self, x):
        y = torch.relu(self.fc(x))
        if torch.compiler.is_compiling():
            return {"out": y, "extra": y * 2}
        return {"out": y}


class RefusesFloat64(_Base):
    """Works in any precision but float64, as models with float32-only kernels do."""

    def forward(self, x):
        if x.dtype == torch.float64:
            raise TypeError("refuses_float64: this model has no float64 kernel, on purpose")
        return torch.relu(self.fc(x))


class ElementwiseChain(_Base):
    """Eager bfloat16 rounds after every operation; Inductor's fused kernel computes the chain in float32 and
    rounds once: the two differ far beyond a tight tolerance, and the compiled one is the closer to float64."""

    def forward(self, x):
        y = self.fc(x)
        for _ in range(6):
            y = torch.sin(y * 1.7 + 0.3) * 1.3 + y * 0.5
        return y


class BigBuffer(_Base):
    """Holds a buffer of BYTES, every page written (so resident), and reads one element of it per forward."""

    BYTES = 64 * 2**20

    def __init__(self):
        super().__init__()
        self.register_buffer("hoard", torch.ones(self.BYTES // 4))

    def forward(self, x):
        return torch.relu(self.fc(x)) + self.hoard[0]


class HeapBuffers(_Base):
    """Holds BYTES in many small buffers (each below glibc's smallest mmap threshold, so they live in the heap,
    where freed memory stays in the process for the next allocation; every page written, so resident) and reads
    one element of the first per forward."""

    BYTES = 48 * 2**20
    PIECE = 64 * 2**10

    def __init__(self):
        super().__init__()
        self.hoard = nn.ParameterList(nn.Parameter(torch.ones(self.PIECE // 4), requires_grad=False)
                                      for _ in range(self.BYTES // self.PIECE))

    def forward(self, x):
        return torch.relu(self.fc(x)) + self.hoard[0][0]


class _NthInstanceRaises(_Base):
    """Raises in forward when it is the RAISING-th instance built in this process (0: the first): --verify builds
    the config's model first, then a fresh eager model for each reference run, so this picks the run that fails."""

    RAISING = 0
    _built = itertools.count()

    def __init__(self):
        super().__init__()
        self.index = next(_NthInstanceRaises._built)

    def forward(self, x):
        if self.index == self.RAISING:
            raise RuntimeError(f"{type(self).__name__}: instance {self.index} of this process fails, on purpose")
        return torch.relu(self.fc(x))


class FirstEagerRunRaises(_NthInstanceRaises):
    RAISING = 1


class SecondEagerRunRaises(_NthInstanceRaises):
    RAISING = 2


class Plain(_Base):
    """Works: a linear layer and a relu (the rule's test lists name it under other names)."""

    def forward(self, x):
        return torch.relu(self.fc(x))


class CountsItsCalls(_Base):
    """Works; its output grows by STEP with every call (a call counter kept in a buffer): two runs from the same
    seed and inputs differ by exactly STEP (--deterministic: fail_nondeterministic)."""

    STEP = 1e-3

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return torch.relu(self.fc(x)) + self.calls * self.STEP


class NoDeterministicKernel(_Base):
    """Works; its forward scatters with `Tensor.put_` (accumulate=False), an operator torch 2.9 has no
    deterministic implementation of on the CPU either: under --deterministic torch raises, naming `put_`."""

    def forward(self, x):
        y = torch.relu(self.fc(x)).reshape(-1)
        order = torch.arange(y.numel() - 1, -1, -1, device=y.device)
        return torch.zeros_like(y).put_(order, y).reshape(x.shape[0], -1)


class RowWise(nn.Module):
    """Works; element-wise operations only (a per-feature scale and shift, relu, products): each sample's output
    depends on that sample alone, bit for bit, at any batch size (--batch-invariant: pass)."""

    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.scale = nn.Parameter(torch.randn(8, generator=generator))
        self.shift = nn.Parameter(torch.randn(8, generator=generator))

    def forward(self, x):
        return torch.relu(x * self.scale + self.shift) * x + x.abs()


class NormalisesOverBatch(_Base):
    """Works; subtracts the batch's mean from every sample, so a sample's output depends on the others in its batch
    (--batch-invariant: fail_batch_invariance at the first smaller batch)."""

    def forward(self, x):
        y = self.fc(x)
        return y - y.mean(dim=0, keepdim=True)


# Faults armed by the child's environment, not by the config: the same config passes in one run and fails in the
# next, as after a change of code (history and compare see a config go from pass to failing). A comma list of names.
ARMED_VARIABLE = "BENCHMARKS_FAULTS_ARMED"


def armed(name: str) -> bool:
    return name in os.environ.get(ARMED_VARIABLE, "").split(",")


class DriftsWhenArmed(Plain):
    """Works; armed (`drift`), its output is 1 % larger when dynamo compiles it: --verify's fail_accuracy."""

    def __init__(self):
        super().__init__()
        self.armed = armed("drift")  # read once, in eager code: dynamo guards on the attribute

    def forward(self, x):
        out = torch.relu(self.fc(x))
        return out * 1.01 if self.armed and torch.compiler.is_compiling() else out


class _MaskDiffersWhenCompiled(nn.Module):
    """Works: scores and the boolean mask of where they are positive, as a segmentation model's output (SAM's);
    when dynamo compiles it, its first FLIPPED mask elements are flipped. 4 x 1024 elements, about half of them set."""

    FLIPPED = 0

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1024)

    def forward(self, x):
        scores = self.fc(x)
        masks = scores > 0
        if torch.compiler.is_compiling():
            flipped = torch.arange(masks.numel(), device=masks.device).reshape(masks.shape) < self.FLIPPED
            masks = masks ^ flipped
        return {"scores": scores, "masks": masks}


class MaskDiffersALittle(_MaskDiffersWhenCompiled):
    """4 elements of about 2000 set: an overlap (IoU) of at least 0.996 with eager's, inside the harness's 0.99."""

    FLIPPED = 4


class MaskDiffersALot(_MaskDiffersWhenCompiled):
    """A quarter of its elements: an overlap near 0.6, a failure by any rule."""

    FLIPPED = 1024


class CrashesWhenArmed(Plain):
    """Works; armed (`crash`), its forward dereferences a null pointer (a crash record)."""

    def __init__(self):
        super().__init__()
        self.armed = armed("crash")

    def forward(self, x):
        if self.armed:
            ctypes.string_at(0)
        return torch.relu(self.fc(x))


class PageChurn(_Base):
    """Writes a fresh buffer of BYTES every forward: above the most glibc's mmap threshold can be (32 MiB), so
    under --allocator=system each call maps it, faults every page in and unmaps it (heavy page faults in every
    timed run); under the default policy (no block mapped) the heap serves and reuses it."""

    BYTES = 64 * 2**20

    def forward(self, x):
        scratch = torch.ones(self.BYTES // 4)
        return torch.relu(self.fc(x)) + scratch[-1]


LOCK_VARIABLE = "BENCHMARKS_FAULTS_LOCK"


class WaitsForALock(_Base):
    """With BENCHMARKS_FAULTS_LOCK naming a file, its forward waits for an exclusive lock on it, as a child waits
    for the Inductor cache's lock on a kernel a hung neighbour compiles too; without, it works."""

    def forward(self, x):
        path = os.environ.get(LOCK_VARIABLE)
        if path:
            with open(path, "a") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
        return torch.relu(self.fc(x))


class PollsForALock(_Base):
    """With BENCHMARKS_FAULTS_LOCK naming a file, its forward takes it through filelock, which polls (as
    Inductor's cache locks do: no waiter shows in /proc/locks); without, it works."""

    def forward(self, x):
        path = os.environ.get(LOCK_VARIABLE)
        if path:
            import filelock

            with filelock.FileLock(path):
                pass
        return torch.relu(self.fc(x))


PROFILER_LOG_VARIABLE = "BENCHMARKS_FAULTS_PROFILER_LOG"


def _note_the_profiler(path: str) -> None:
    import torch.autograd.profiler as autograd_profiler

    with open(path, "a") as handle:
        handle.write(f"{os.getpid()} {int(bool(autograd_profiler._is_profiler_enabled))}\n")


class NotesTheProfiler(_Base):
    """Works; with BENCHMARKS_FAULTS_PROFILER_LOG naming a file, every forward appends a line to it: its process id,
    then 1 when torch's profiler is active (torch.autograd.profiler._is_profiler_enabled), else 0."""

    def __init__(self):
        super().__init__()
        path = os.environ.get(PROFILER_LOG_VARIABLE)
        # dynamo-disabled (imports dynamo, so only when asked): Python runs it at every call, compiled or not
        self.note = functools.partial(torch.compiler.disable(_note_the_profiler), path) if path else None

    def forward(self, x):
        if self.note is not None:
            self.note()
        return torch.relu(self.fc(x))


class CudaOutOfMemory(_Base):
    """Asks the GPU for 64 TiB: torch.OutOfMemoryError at once (the process's CUDA context stays usable)."""

    def forward(self, x):
        torch.empty(1 << 46, dtype=torch.uint8, device=x.device)
        return self.fc(x)


class CudaDeviceAssert(_Base):
    """Indexes past the end of a CUDA tensor: the kernel's assert fires on the device ("device-side assert
    triggered"), and every later CUDA call of the process fails."""

    def forward(self, x):
        return self.fc(x)[torch.full((1,), x.shape[0] + 100, device=x.device)]


class CudaIllegalAddress(_Base):
    """A Triton kernel stores 1 TiB past its buffer: "an illegal memory access was encountered", the process's
    CUDA context lost."""

    def forward(self, x):
        from benchmarks.suites import faults_triton

        faults_triton.store_far_away(x)
        return self.fc(x)


MODELS = {
    "segfault": Segfault,
    "hang": Hang,
    "sleepy": Sleepy,
    "memory_hog": MemoryHog,
    "silent_exit": SilentExit,
    "random_output": RandomOutput,
    "graph_break": GraphBreak,
    "falls_back_to_eager": FallsBackToEager,
    "mixed_dtypes": MixedDtypes,
    "unseeded_noise": RandomOutput,  # the same noise, but its BenchmarkModel does not declare it
    "third_call_raises": ThirdCallRaises,
    "structure_differs": StructureDiffers,
    "refuses_float64": RefusesFloat64,
    "elementwise_chain": ElementwiseChain,
    "big_buffer": BigBuffer,
    "heap_buffers": HeapBuffers,
    "first_eager_run_raises": FirstEagerRunRaises,
    "second_eager_run_raises": SecondEagerRunRaises,
    "listed_non_deterministic": Plain,
    "listed_unchecked": Plain,
    "page_churn": PageChurn,
    "waits_for_a_lock": WaitsForALock,
    "polls_for_a_lock": PollsForALock,
    "drifts_when_armed": DriftsWhenArmed,
    "crashes_when_armed": CrashesWhenArmed,
    "mask_differs_a_little": MaskDiffersALittle,
    "mask_differs_a_lot": MaskDiffersALot,
    "notes_the_profiler": NotesTheProfiler,
    "counts_its_calls": CountsItsCalls,
    "no_deterministic_kernel": NoDeterministicKernel,
    "row_wise": RowWise,
    "normalises_over_batch": NormalisesOverBatch,
    "cuda_out_of_memory": CudaOutOfMemory,
    "cuda_device_assert": CudaDeviceAssert,
    "cuda_illegal_address": CudaIllegalAddress,
}
CUDA_ONLY = frozenset({"cuda_out_of_memory", "cuda_device_assert", "cuda_illegal_address"})
