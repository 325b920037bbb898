"""`timm`: the timm models of PyTorch's dynamo benchmark harness (its timm_models_list.txt names and batch
sizes) by default, and any other `timm.list_models()` architecture named exactly with -k NAME (an optional
pretrained tag after a dot picks that config; batch size NAMED_BATCH_SIZE unless --batch-size), built with `timm.create_model(name, pretrained=False)` (random weights, nothing downloaded) and fed
images as the harness makes them: the size timm's resolve_data_config gives (eval: the config's test size where
it has one, e.g. dm_nfnet_f0 256 where its train size is 192; train: the train size), random pixel values in
[0, 256) under seed 1337, normalised by their own mean and standard deviation. Train: cross-entropy on fixed
random labels.

--model-params: `image_size` (e.g. 64 for quick CPU runs) overrides that size in eval and train: transformers
are built for it (img_size=...), convolutional models take it as it is; an architecture that cannot take the
size is a skip record saying why.
Named timm_suite so that it never shadows the timm package. Listing needs neither torch nor timm.
"""

from __future__ import annotations

import importlib.util
from typing import Optional

from benchmarks.config import tolerances
from benchmarks.config.train_steps import HARNESS_TRAIN_STEP
from benchmarks.suites import BenchmarkModel, ModelSkipped, Suite

INSTALL = "pip install timm==1.0.31 (the project's `timm` extra)"
# The harness's names (a pretrained tag picks that checkpoint's default config, not its weights) and batch sizes.
MODELS = {
    "adv_inception_v3": 128,
    "beit_base_patch16_224": 128,
    "convnextv2_nano.fcmae_ft_in22k_in1k": 128,
    "deit_base_distilled_patch16_224": 128,
    "deit_tiny_patch16_224.fb_in1k": 128,
    "dm_nfnet_f0": 128,
    "ghostnet_100": 512,
    "inception_v3": 128,
    "mobilenetv2_100": 128,
    "mobilenetv3_large_100": 512,
    "mobilevit_s": 128,
    "nfnet_l0": 128,
    "repvgg_a2": 128,
    "swin_base_patch4_window7_224": 128,
    "tf_efficientnet_b0": 128,
    "visformer_small": 128,
    "vit_base_patch14_dinov2.lvd142m": 128,
    "vit_base_patch16_siglip_256": 128,
}
# Batch size of a model named outside the harness's list (-k NAME), unless --batch-size says otherwise.
NAMED_BATCH_SIZE = 32
LIST_CODE = "import json, timm; print(json.dumps(timm.list_models()))"
PARAMS = ("image_size",)
# verification_code's limit on the mean relative error, by test: config/tolerances.py's table, which says where each
# is from.
TOLERANCE = tolerances.by_test("timm")
# The harness divides these models' training loss by 1000 (its timm runner's SCALED_COMPUTE_LOSS).
SCALED_LOSS = frozenset({"ese_vovnet19b_dw", "fbnetc_100", "mnasnet_100", "mobilevit_s", "sebotnet33ts_256"})
# Input sizes an architecture cannot take: name -> (test, why); checked in the parent (a skip record). The rest
# were built and run here at 50, 64, 70, 96 and 100 pixels (timm pads or resizes patches and windows).
SIZE_LIMITS = {
    name: (lambda size: size >= 75, f"{name}'s stem shrinks smaller images below its 3x3 kernels: it needs "
           "an image_size of at least 75")
    for name in ("adv_inception_v3", "inception_v3")
}


def check_params(params: dict) -> str:
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        return f"timm takes only {', '.join(PARAMS)} in --model-params, not {', '.join(unknown)}"
    size = params.get("image_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        return f"--model-params image_size must be a positive integer, not {size!r}"
    return ""


def create(timm, name: str, size: Optional[int]):
    """The model as the harness creates it; with a size, transformers are built for it (img_size)."""
    kwargs = dict(pretrained=False, in_chans=3, drop_rate=0.0)
    if size is None:
        return timm.create_model(name, **kwargs)
    try:
        return timm.create_model(name, img_size=size, **kwargs)
    except TypeError as exc:
        if "img_size" not in str(exc):
            raise
    return timm.create_model(name, **kwargs)  # a convolutional network: any size passes through


# The harness's input seed (its timm runner seeds right before it draws the images).
IMAGE_SEED = 1337


def input_size(module, test: str, size: Optional[int]) -> tuple:
    """((channels, height, width), where the size came from): --model-params image_size if given, else timm's
    own data config for the model as the harness resolves it, at the test size in eval and the train size in
    train (the same where the model's config has no test size)."""
    from timm.data import resolve_data_config

    channels, height, width = resolve_data_config({}, model=module, use_test_size=test == "eval")["input_size"]
    if size:
        return (channels, size, size), "model_params"
    return (channels, height, width), "test" if test == "eval" else "train"


def harness_images(batch_size: int, shape: tuple):
    """The harness's images: integers in [0, 256) drawn under its seed, as floats, normalised by the batch's
    one mean and standard deviation (not per channel, not ImageNet's statistics)."""
    import torch

    generator = torch.Generator().manual_seed(IMAGE_SEED)
    pixels = torch.randint(256, (batch_size,) + tuple(shape), generator=generator).to(torch.float32)
    return (pixels - pixels.mean()) / pixels.std()


def has_random_layers(module) -> bool:
    from torch import nn

    return any((isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0) or getattr(m, "drop_prob", 0) > 0
               for m in module.modules())


def harness_loss(scaled: bool):
    """The harness's timm loss: the first output if a tuple, reduced by torch's generic reduction (/1000 if scaled)."""
    from torch._dynamo.testing import reduce_to_scalar_loss

    def loss(output):
        if isinstance(output, tuple):
            output = output[0]
        value = reduce_to_scalar_loss(output)
        return value / 1000.0 if scaled else value

    return loss


SUITE_NAME = "timm"
DESCRIPTION = "timm's models"
ORDER = 90


class TimmSuite(Suite):
    name = SUITE_NAME
    default_train_step = HARNESS_TRAIN_STEP

    def list_models(self, flags):
        from benchmarks.suites import files

        return files.models_with_params(self.name, MODELS, flags, check_params)

    def named_models(self, names, flags):
        from benchmarks.suites import files, library_names

        if importlib.util.find_spec("timm") is None:
            return []  # nothing to name from; the harness's models are skips that say how to install timm
        known = library_names.names_from_child(LIST_CODE, "timm's models")
        architectures = set(known)
        for name in names:
            if name.split(".")[0] not in architectures:
                raise library_names.unknown_name(name, known, "timm")
        return files.models_with_params(self.name, names, flags, check_params)

    def skip_reason(self, model_config, experiment, flags) -> Optional[str]:
        if importlib.util.find_spec("timm") is None:
            return f"the timm suite needs timm, which is not installed: {INSTALL}"
        from benchmarks.suites import files

        return files.size_limit_reason(model_config, SIZE_LIMITS)

    def build(self, model_config, experiment, device, flags):
        import torch

        from benchmarks.suites.torchvision_suite import classification_loss, import_torchvision

        import_torchvision("the timm suite")  # timm imports it: a torchvision that can't load costs timm's configs
        try:
            import timm
        except ImportError as exc:
            raise ModelSkipped(f"the timm suite needs timm ({exc}); {INSTALL}")
        name = model_config["model_name"]
        params = dict(model_config.get("params") or {})
        problem = check_params(params)
        if problem:
            raise ValueError(problem)
        size = params.get("image_size")
        try:
            module = create(timm, name, size)
        except (AssertionError, ValueError) as exc:
            if size is None:
                raise
            raise ModelSkipped(f"timm cannot build {name} for image_size {size}: {str(exc).splitlines()[0]}")
        shape, size_from = input_size(module, experiment.test, size)
        classes = module.num_classes  # 0 for feature models (dinov2, siglip): no labels, the generic loss
        batch_size = experiment.batch_size or MODELS.get(name, NAMED_BATCH_SIZE)
        images = harness_images(batch_size, shape)
        labels = torch.randint(0, max(classes, 1), (batch_size,), generator=torch.Generator().manual_seed(0))
        # The harness's step is checked with eager's RNG (a reset seed, Inductor's fallback_random): dropout is judged.
        deterministic = experiment.test == "eval" or experiment.harness_train_step or not has_random_layers(module)
        return BenchmarkModel(
            module=module.to(device), example_inputs=(images.to(device),), batch_size=batch_size,
            loss_fn=classification_loss(labels.to(device)) if classes else None,
            harness_loss=harness_loss(name.split(".")[0] in SCALED_LOSS),
            tolerance=TOLERANCE[experiment.test] if deterministic else None, deterministic=deterministic,
            info={"image_size": list(shape[1:]), "image_size_from": size_from, "num_classes": classes},
        )


SUITE = TimmSuite()
