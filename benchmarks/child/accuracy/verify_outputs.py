"""What --verify compares of a config's step, and how the harness's training step is checked (child only; torch
is imported by the functions): `collect` (the output for eval; the loss and gradients for train, and under the
harness's step every parameter and buffer too), the iterations per check, Inductor's fallback_random for the
check's own compiled step, the bytes the kept references hold, and how paths in messages start."""

from __future__ import annotations

import contextlib
from typing import Any

from benchmarks.child import torch_internals
from benchmarks.child.accuracy.output_tree import leaves, to_cpu


def harness_step(experiment) -> bool:
    return experiment.harness_train_step


def iterations_for(experiment) -> int:
    """--verify-iterations' default: 2 under the harness's training step (the harness checks after its default
    --iterations), else 1."""
    return 2 if harness_step(experiment) else 1


def uses_fallback_random(experiment) -> bool:
    """Whether the check compiles its own step with Inductor's fallback_random: the harness's step under dynamo."""
    return harness_step(experiment) and bool(experiment.dynamo)


def fallback_random():
    """A context in which a step compiles with Inductor's fallback_random (random ops drawn from eager's generator,
    so dropout masks are eager's under a reset seed). Dynamo's caches are dropped first: Inductor reads the
    setting when it compiles, and a step of the same code would reuse the timed step's compiled graphs (timing is
    over; dynamo_stats were read before)."""
    import torch

    torch._dynamo.reset()

    def patched():
        import torch._inductor.config as config

        getattr(config, "fallback_random")  # a torch without the setting: absent, the check runs without it
        return config.patch(fallback_random=True)

    return torch_internals.read(torch_internals.FALLBACK_RANDOM, "torch._inductor.config.fallback_random", patched,
                                contextlib.nullcontext())


def collect(experiment, module, output) -> Any:
    """What is compared, on the CPU: the output (eval), or the loss and every parameter's gradient (train); under
    the harness's step also every parameter and buffer, a missing gradient as zeros (the harness's collect_results)."""
    if experiment.test == "train":
        if isinstance(output, dict) and "loss" in output:  # --collect-full-output's step returns more
            output = output["loss"]
        if harness_step(experiment):
            import torch

            return {"loss": to_cpu(output),
                    "grad": {name: to_cpu(p.grad if p.grad is not None else torch.zeros_like(p))
                             for name, p in module.named_parameters()},
                    "param": {name: to_cpu(p) for name, p in module.named_parameters()},
                    "buffer": {name: to_cpu(b) for name, b in module.named_buffers()}}
        return {"loss": to_cpu(output),
                "grad": {name: to_cpu(p.grad) for name, p in module.named_parameters()}}
    return to_cpu(output)


def tensor_bytes(tree: Any) -> int:
    """Bytes of the CPU tensor storages in a CPU tree (output_tree.leaves walks it), each storage counted once."""
    import torch

    storages = {}
    for leaf in leaves(tree).values():
        if isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu" and leaf.layout == torch.strided:
            storage = leaf.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def root_name(experiment) -> str:
    """How paths in messages start: output[...] for eval; loss, grad['fc.weight'] for train."""
    return "" if experiment.test == "train" else "output"
