"""`torchvision`: torchvision's classification models with random weights (`weights=None`: nothing is
ever downloaded) and synthetic inputs. Train uses cross-entropy on fixed random labels.

Named torchvision_suite so that it never shadows the torchvision package. Listing needs no torch.
Parameters (--model-params): `image_size` (default 224, 299 for inception_v3) and `num_classes`
(default 1000), e.g. '{"image_size": 64}' for quick CPU runs.
"""

from __future__ import annotations

import importlib.util

from benchmarks.plumbing import machine_facts
from benchmarks.suites import BenchmarkModel, ModelSkipped, Suite, files

INSTALL = ("pip install torchvision built for your torch (its release line and its variant: a +cpu torch needs a +cpu "
           "torchvision, from PyTorch's own index)")

# name -> default batch size, chosen so one step takes about a second or less on a laptop CPU.
MODELS = {
    "alexnet": 8,
    "convnext_base": 2,
    "convnext_tiny": 4,
    "densenet121": 4,
    "efficientnet_b0": 4,
    "efficientnet_v2_s": 2,
    "googlenet": 4,
    "inception_v3": 2,
    "maxvit_t": 2,
    "mnasnet1_0": 8,
    "mobilenet_v2": 8,
    "mobilenet_v3_large": 8,
    "mobilenet_v3_small": 8,
    "regnet_x_1_6gf": 4,
    "regnet_y_400mf": 8,
    "resnet152": 2,
    "resnet18": 8,
    "resnet50": 4,
    "resnext50_32x4d": 4,
    "shufflenet_v2_x1_0": 8,
    "squeezenet1_1": 8,
    "swin_b": 2,
    "swin_t": 2,
    "vgg16": 2,
    "vit_b_16": 2,
    "vit_l_16": 1,
    "wide_resnet50_2": 2,
}
DEFAULT_IMAGE_SIZE = {"inception_v3": 299}
PARAMS = ("image_size", "num_classes")
# Models whose architecture is built for one input size: the builder is told the size.
SIZED_BY_BUILDER = {"vit_b_16": "image_size", "vit_l_16": "image_size", "maxvit_t": "input_size"}
# Input sizes an architecture cannot take: name -> (test, why); checked in the parent (a skip record).
SIZE_LIMITS = {
    "inception_v3": (lambda size: size >= 75, "inception_v3 needs an image_size of at least 75"),
    "maxvit_t": (lambda size: size % 224 == 0, "maxvit_t needs an image_size that is a multiple of 224 "
                 "(its 7x7 attention windows at every stage)"),
    "vit_b_16": (lambda size: size % 16 == 0, "vit_b_16 needs an image_size that is a multiple of 16 (its patches)"),
    "vit_l_16": (lambda size: size % 16 == 0, "vit_l_16 needs an image_size that is a multiple of 16 (its patches)"),
}


def check_params(params: dict) -> str:
    """'' if torchvision can use these --model-params, else why not (one line)."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        return f"torchvision takes only {', '.join(PARAMS)} in --model-params, not {', '.join(unknown)}"
    for key in PARAMS:
        value = params.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            return f"--model-params {key} must be a positive integer, not {value!r}"
    return ""


SUITE_NAME = "torchvision"
DESCRIPTION = "torchvision's models"
ORDER = 30


class TorchvisionSuite(Suite):
    name = SUITE_NAME

    def list_models(self, flags):
        return files.models_with_params(self.name, MODELS, flags, check_params)


    def skip_reason(self, model_config, experiment, flags):
        if importlib.util.find_spec("torchvision") is None:
            return f"the torchvision suite needs torchvision, which is not installed: {INSTALL}"
        return files.size_limit_reason(model_config, SIZE_LIMITS)

    def build(self, model_config, experiment, device, flags):
        import torch

        torchvision = import_torchvision("the torchvision suite")

        name = model_config["model_name"]
        if name not in MODELS:
            raise KeyError(f"torchvision suite has no model {name!r}")
        params = dict(model_config.get("params") or {})
        problem = check_params(params)
        if problem:
            raise ValueError(problem)
        size = params.get("image_size") or DEFAULT_IMAGE_SIZE.get(name, 224)
        classes = params.get("num_classes") or 1000
        kwargs = {"weights": None, "num_classes": classes}
        if name in SIZED_BY_BUILDER and params.get("image_size"):
            key = SIZED_BY_BUILDER[name]
            kwargs[key] = size if key == "image_size" else (size, size)
        if name in ("googlenet", "inception_v3"):
            kwargs["init_weights"] = True  # without weights, say so (avoids a FutureWarning)
        module = torchvision.models.get_model(name, **kwargs).to(device)
        batch_size = experiment.batch_size or MODELS[name]
        generator = torch.Generator().manual_seed(0)
        images = torch.randn(batch_size, 3, size, size, generator=generator).to(device)
        labels = torch.randint(0, classes, (batch_size,), generator=generator).to(device)
        return BenchmarkModel(
            module=module, example_inputs=(images,), batch_size=batch_size,
            loss_fn=classification_loss(labels).to(device),
            # Dropout and stochastic depth draw from the device's RNG while training: backends differ by design.
            deterministic=experiment.test == "eval" or not has_random_layers(module),
            info={"image_size": size, "num_classes": classes},
        )


def import_torchvision(who: str):
    """torchvision, or ModelSkipped saying why it can't load here (a skip record: the configs that need it cost
    nothing more). A torchvision built for another torch fails as it registers its operators ("operator
    torchvision::nms does not exist": torch 2.13.0+cpu beside the registry's torchvision 0.28.0)."""
    try:
        import torchvision
    except Exception as exc:  # ImportError, or a build for another torch: RuntimeError, OSError (undefined symbol)
        import torch

        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        version = machine_facts.package_version("torchvision")
        raise ModelSkipped(f"{who} needs torchvision, and torchvision{' ' + version if version else ''} does not load "
                           f"beside torch {torch.__version__} ({type(exc).__name__}: {detail}); {INSTALL}") from exc
    return torchvision


def has_random_layers(module) -> bool:
    from torch import nn
    from torchvision.ops import StochasticDepth

    return any(isinstance(m, (nn.modules.dropout._DropoutNd, StochasticDepth)) and m.p > 0 for m in module.modules())


def classification_loss(labels):
    """Cross-entropy against fixed labels, as a module so that the labels move with it (XLA)."""
    import torch
    from torch import nn

    class CrossEntropyOnLabels(nn.Module):
        def __init__(self, targets):
            super().__init__()
            self.register_buffer("targets", targets)

        def forward(self, output):
            # GoogLeNet and Inception return their auxiliary heads too while training.
            if isinstance(output, tuple) and hasattr(output, "logits"):
                loss = nn.functional.cross_entropy(output.logits, self.targets)
                for aux in output[1:]:
                    if isinstance(aux, torch.Tensor):
                        loss = loss + 0.3 * nn.functional.cross_entropy(aux, self.targets)
                return loss
            return nn.functional.cross_entropy(output, self.targets)

    return CrossEntropyOnLabels(labels)


SUITE = TorchvisionSuite()
