"""Every config's work, counted after its timed runs and outside them: FLOPs by torch's FlopCounterMode over one eager
iteration on the config's module and example inputs (run on fake tensors: shapes and FLOPs without the arithmetic;
for real where fake tensors can't run it), and the compulsory bytes of an iteration; for a generate run,
the FLOPs and bytes of one decoded token. Then the record's `roofline` (results/roofline_figures.py) against the
machine's ceilings (environment.ceilings). docs/roofline.md says what is counted. Child only: imports torch.

Compulsory bytes, per iteration:
  eval:  parameters and buffers once (each storage once: tied weights count once) + the inputs' tensors + the
         forward's output tensors;
  train: the same, + each gradient written once by backward; with an optimizer step, each gradient read once, each
         parameter written once, and the optimizer's state tensors read and written once each.
Per decoded token (generate): the weights once (an input embedding table not tied to the output layer left out: a
token reads one row of it) + the KV cache read at the mean decode position (prompt + new/2:
2 × layers × kv heads × head dim × position × batch × itemsize); FLOPs: 2 × the Linear layers' weights + the
attention's 4 × layers × heads × head dim × position, times the batch."""

from __future__ import annotations

import contextlib
import time
from typing import Optional

import torch

from benchmarks.child import feature_methods, flop_formulas
from benchmarks.results import roofline_figures

HOW_EVAL = ("FLOPs: torch.utils.flop_counter.FlopCounterMode over one eager forward on the example inputs (matmul, "
            "convolution and scaled-dot-product attention FLOPs, causal attention half; elementwise operations, "
            "softmax and reductions count 0); bytes: parameters and buffers once + inputs + outputs")
HOW_TRAIN = ("FLOPs: FlopCounterMode over one eager forward + loss + backward on the example inputs (the optimizer's "
             "elementwise step counts 0 and is not run); bytes: parameters and buffers once + inputs + outputs + "
             "gradients written{optimizer}")
HOW_OPTIMIZER = ", and read by the optimizer, parameters written by it, its state read and written"
HOW_SUITE = "FLOPs: the operator's exact count (the suite's model_info.flops); bytes: inputs + outputs + parameters"
HOW_GENERATE = ("per decoded token: FLOPs 2 x Linear weights + 4 x layers x heads x head_dim x position; bytes: "
                "weights + KV cache read (2 x layers x kv_heads x head_dim x position x itemsize), at the mean decode "
                "position (prompt + new tokens / 2), times the batch; achieved from decode_tokens_per_second")


class CannotCount(Exception):
    """Why a config's work has no count (the roofline's why_not)."""


def tensors_in(tree, seen: Optional[set] = None) -> list:
    """Every tensor in a nested output or input (tensors, dicts, lists, tuples, ModelOutputs, dataclass-likes), each
    storage once."""
    seen = set() if seen is None else seen
    found = []

    def walk(value, depth=0):
        if depth > 20:
            return
        if isinstance(value, torch.Tensor):
            key = id(value) if is_fake(value) or value.device.type == "meta" else (
                value.untyped_storage().data_ptr(), value.nbytes)
            if key not in seen:
                seen.add(key)
                found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, depth + 1)
        elif hasattr(value, "to_tuple"):
            walk(value.to_tuple(), depth + 1)
        elif hasattr(value, "__dict__") and not isinstance(value, torch.nn.Module):
            walk(list(vars(value).values()), depth + 1)

    walk(tree)
    return found


def nbytes(tensors) -> int:
    return sum(int(t.nbytes) for t in tensors)


def weights_bytes(module) -> int:
    """Parameters and buffers, each storage once."""
    return nbytes(tensors_in(list(module.parameters()) + list(module.buffers())))


def is_fake(tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(tensor, FakeTensor)


def counted_flops(fn, fake: bool) -> tuple:
    """(FLOPs counted over fn(), its result, the operators no formula counted). `fake`: under FakeTensorMode, the real
    weights and inputs read as fake tensors: every shape and FLOP as in a real run, no arithmetic done (resnet18's
    training step here: 0.26 s, not 1.9 s), no buffer changed. torch's formulas, with ours for attention on every
    device (child/flop_formulas.py)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False, custom_mapping=flop_formulas.custom_mapping())
    blind = flop_formulas.Blind(counter.flop_registry)
    if fake:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True), counter, blind:
            result = fn()
    else:
        with counter, blind:
            result = fn()
    return int(counter.get_total_flops()), result, blind.missed


def counted_iteration(fn) -> tuple:
    """(FLOPs, output, the operators not counted, how it ran) of one iteration: on fake tensors, or, where the model
    can't run on them (a custom operator without a fake implementation, data-dependent shapes), for real."""
    try:
        return (*counted_flops(fn, fake=True), "fake tensors")
    except Exception:  # noqa: BLE001 - whatever fake tensors can't run, the real iteration may
        return (*counted_flops(fn, fake=False), "a real eager iteration")


@contextlib.contextmanager
def state_kept(module, experiment):
    """The module's gradients, buffers and the random generators as they were before the count: the count changes
    nothing the checks after it read."""
    grads = {p: p.grad for p in module.parameters()}
    buffers = [(b, b.detach().clone()) for b in module.buffers()]
    devices = [torch.cuda.current_device()] if experiment.accelerator == "cuda" and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            for p, grad in grads.items():
                p.grad = grad
            with torch.no_grad():
                for buffer, saved in buffers:
                    buffer.copy_(saved)


def count_iteration(bm, experiment, module, args: tuple, kwargs: dict, optimizer=None) -> dict:
    """{flops, bytes, how, bytes_detail} of one eager iteration of the config; CannotCount where it has none."""
    if experiment.xla:
        raise CannotCount("XLA configs: FlopCounterMode does not see lazy tensors' operations")
    if experiment.quantization:
        raise CannotCount("quantized (TorchAO) configs: no integer ceilings are measured")
    if experiment.dynamic not in (None, "static"):
        raise CannotCount(f"--dynamic={experiment.dynamic}: the timed iterations cycle through batch sizes, the count "
                          "is of one")
    inputs = nbytes(tensors_in((args, kwargs)))
    detail = {"weights": weights_bytes(module), "inputs": inputs}
    train = experiment.test == "train"
    with state_kept(module, experiment):
        try:
            flops, outputs, missed, ran = counted_iteration(
                lambda: eager_iteration(bm, experiment, module, args, kwargs, train))
        except Exception as exc:  # noqa: BLE001 - a model the counter can't run gets no roofline, not a failure
            raise CannotCount(f"counting FLOPs raised {type(exc).__name__}: {str(exc).strip()[:200]}") from None
        detail["outputs"] = nbytes(tensors_in(outputs))
        del outputs
    how = HOW_EVAL
    if train:
        trained = [p for p in module.parameters() if p.requires_grad]
        grads = nbytes(tensors_in(trained))
        detail["gradients"] = grads * (2 if optimizer is not None else 1)
        if optimizer is not None:
            detail["parameters_written"] = grads
            state = [v for s in optimizer.state.values() for v in (s.values() if isinstance(s, dict) else [])]
            detail["optimizer_state"] = 2 * nbytes(tensors_in(state))
        how = HOW_TRAIN.format(optimizer=HOW_OPTIMIZER if optimizer is not None else " (no optimizer step)")
    suite_flops = (bm.info or {}).get("flops")
    if isinstance(suite_flops, (int, float)) and suite_flops > 0:  # microbench: the operator's own exact count
        flops, how = int(suite_flops), HOW_SUITE
    else:
        how += flop_formulas.not_counted(missed)
    return {"flops": flops, "bytes": sum(detail.values()), "bytes_detail": detail, "how": f"{how}; counted on {ran}"}


def eager_iteration(bm, experiment, module, args, kwargs, train: bool):
    """One eager iteration on the config's module: the forward (eval), or forward + loss + backward (train); returns
    the forward's output."""
    if not train:
        grad_mode = torch.enable_grad if bm.eval_needs_grad else torch.no_grad
        with grad_mode(), feature_methods.provided("step_context")(experiment):
            return module(*args, **kwargs)
    from benchmarks.child import measured_loop

    if experiment.harness_train_step:
        from torch._dynamo.testing import reduce_to_scalar_loss

        loss_fn = bm.harness_loss or reduce_to_scalar_loss
    else:
        loss_fn = bm.loss_fn or measured_loop.reduce_to_scalar
    with feature_methods.provided("step_context")(experiment):
        output = module(*args, **kwargs)
        loss = loss_fn(output)
    loss.backward()
    return output


def count_token(bm, experiment, module) -> dict:
    """{flops, bytes, how, position} of one decoded token of a generate run (the whole batch's step)."""
    if experiment.xla:
        raise CannotCount("XLA configs: the ceilings are torch's kernels'")
    config = getattr(module, "config", None)
    layers = getattr(config, "num_hidden_layers", None)
    heads = getattr(config, "num_attention_heads", None)
    if not (layers and heads):
        raise CannotCount("the model's config names no num_hidden_layers / num_attention_heads")
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    generation = bm.generation
    prompt = generation.prompt_tokens if generation.prompt_tokens is not None else prompt_tokens(bm)
    position = prompt + generation.new_tokens / 2
    batch = bm.batch_size or 1
    linear = nbytes_free_numel(m.weight for m in module.modules() if isinstance(m, torch.nn.Linear))
    itemsize = next(module.parameters()).element_size()
    flops = batch * (2 * linear + 4 * layers * heads * head_dim * position)
    kv = 2 * layers * kv_heads * head_dim * position * batch * itemsize
    weights = weights_bytes(module) - lookup_table_bytes(module)
    return {"flops": flops, "bytes": weights + kv, "bytes_detail": {"weights": weights, "kv_cache": kv},
            "position": position, "how": HOW_GENERATE}


def lookup_table_bytes(module) -> int:
    """The input embedding table's bytes where no Linear layer shares it: a decode step reads one row of it per
    token, not the table (tied to the output layer, it is read whole, as that layer's weight)."""
    embeddings = getattr(module, "get_input_embeddings", lambda: None)()
    table = getattr(embeddings, "weight", None)
    if not isinstance(table, torch.Tensor):
        return 0
    shared = {m.weight.untyped_storage().data_ptr() for m in module.modules() if isinstance(m, torch.nn.Linear)}
    return 0 if table.untyped_storage().data_ptr() in shared else int(table.nbytes)


def nbytes_free_numel(weights) -> int:
    """Elements of these weights, each storage once."""
    return sum(t.numel() for t in tensors_in(list(weights)))


def prompt_tokens(bm) -> int:
    ids = (bm.example_kwargs or {}).get("input_ids")
    return int(ids.shape[-1]) if isinstance(ids, torch.Tensor) else 0


def roofline(run) -> dict:
    """The record's `roofline` for a ConfigRun after its timed runs (child/config_run.py): counted, timed, set
    against environment.ceilings; its `count_seconds` is the counting's own time (outside every timed run)."""
    start = time.perf_counter()
    experiment, record = run.experiment, run.record
    ceilings = record["environment"].get("ceilings")
    metrics = record.get("metrics") or {}
    try:
        if run.bm.generation is not None:
            work = count_token(run.bm, experiment, run.module)
            rates = metrics.get("decode_tokens_per_second") or []
            seconds = [1.0 / r for r in rates if r and r > 0]
            if not seconds:
                raise CannotCount("no decode_tokens_per_second (a single new token has no decode)")
        else:
            optimizer = getattr(run.step, "optimizer", None)
            work = count_iteration(run.bm, experiment, run.module, run.args, run.kwargs, optimizer)
            seconds = list(metrics.get("per_iter_time") or [])
    except CannotCount as exc:
        return {roofline_figures.WHY_NOT: str(exc), "count_seconds": round(time.perf_counter() - start, 4)}
    counted = round(time.perf_counter() - start, 4)  # the count's own time (a remeasurement of the ceilings has its own)
    dtype = roofline_figures.ceiling_dtype(config_dtype(run.bm, experiment), experiment.accelerator,
                                           torch.get_float32_matmul_precision())
    out = roofline_figures.figures(work["flops"], work["bytes"], seconds, ceilings, dtype)
    if out.get(roofline_figures.BEATEN) and ceilings:
        from benchmarks.child import ceilings as machine_ceilings

        # beaten: the ceilings were measured on a busier machine, or by fewer runs than the config's; measured again
        # now (outside the timed runs), the better of the two kept. Still beaten: the counts are wrong, or the bytes
        # stay in a cache: no fraction (or, a single run above 1, no per-run fractions).
        again = machine_ceilings.remeasured(experiment, ceilings)
        if again is not None:
            record["environment"]["ceilings"] = again
            out = roofline_figures.figures(work["flops"], work["bytes"], seconds, again, dtype)
    per = "token" if run.bm.generation is not None else "iteration"
    named = {f"flops_per_{per}": work["flops"], f"bytes_per_{per}": work["bytes"], "bytes_detail": work["bytes_detail"],
             "how": work["how"]}
    if "position" in work:
        named["decode_position"] = work["position"]
    out.pop(roofline_figures.BEATEN, None)
    per_repeat = out.pop("per_repeat", None)
    if per_repeat:  # each timed run's figures, as metrics (compare and the analyzer read them by name)
        metrics.update(per_repeat)
    return {**named, **out, "count_seconds": counted}


def config_dtype(bm, experiment) -> str:
    """The dtype the config's arithmetic runs in: the microbench operator's, else its precision's."""
    dtype = dict(experiment.extra).get("dtype")
    if dtype in roofline_figures.CEILING_DTYPES:
        return dtype
    return feature_methods.provided("compute_dtype")(experiment)

