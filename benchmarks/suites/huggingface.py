"""`huggingface`: Hugging Face transformers models, as PyTorch's dynamo benchmark harness runs them.

The names, batch sizes and sequence lengths are the harness's (huggingface_models.yaml). Each model is built
offline from its config class (random weights; no hub, no tokenizer) and fed the harness's inputs
(huggingface_inputs.py): random token ids of the model's sequence length, its decoder inputs (input_ids for T5,
M2M100, MT5, Blenderbot, Pegasus and Marian; none for Bart, MBart and PLBart, which derive them from the
labels) and the labels of its task, so that eval and train both compute the model's own loss (as the harness
does); train back-propagates that loss. model_info says which seq_len, batch size and decoder inputs ran.

--model-params: config fields ({"num_hidden_layers": 2, "hidden_size": 64}) and the suite's own knobs:
`seq_len` (tokens per sequence) and `dropout` (every float config field with "drop" in its name, e.g. 0 for a
deterministic training step). A field the model's config does not have is an error record for that config.
Listing needs neither torch nor transformers.

The harness's LLM rows (huggingface_llm.py: meta-llama/Llama-3.2-1B ... openai/whisper-tiny) are listed after
them and run by `generate` (docs/generation.md): eval only, batch 1, in bf16 on CUDA as the dashboard runs them.

Beyond the harness's list, -k NAME with the exact name of any model class of transformers' auto mappings
(BertModel, ViTForImageClassification, ...) builds that class from its config's defaults (batch size
NAMED_BATCH_SIZE, the harness's sequence length for the name; overridable with --batch-size and --model-params), fed token ids or, for a model whose
main input is pixel_values, images; a class without labels the suite knows trains on the runner's generic loss.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Optional

from benchmarks.config import tolerances
from benchmarks.config.train_steps import HARNESS_TRAIN_STEP
from benchmarks.config import generation_modes
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.suites import BenchmarkModel, ModelSkipped, Suite, huggingface_llm, model_config
from benchmarks.suites.huggingface_inputs import decoder_rule, make_inputs, sequence_length

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "huggingface_models.yaml")
KNOBS = ("seq_len", "dropout")
INSTALL = "pip install transformers==5.23.0 (the project's `huggingface` extra)"
# verification_code's limit on the mean relative error, by test (config/tolerances.py, which says where each is from).
TOLERANCE = tolerances.by_test("huggingface")
# A model named outside the data file (-k NAME): this batch size, the harness's sequence length for its name.
NAMED_BATCH_SIZE = 8
# The LLM rows' precision on CUDA where none is asked for: the dashboard's.
LLM_CUDA_PRECISION = "bf16"
# Every model class name of transformers' auto mappings (what AutoModel* can build from a config), as JSON.
LIST_CODE = """import json
from transformers.models.auto import modeling_auto as auto
names = set()
for key, mapping in vars(auto).items():
    if key.endswith("_MAPPING_NAMES") and isinstance(mapping, dict):
        for value in mapping.values():
            names.update([value] if isinstance(value, str) else value)
print(json.dumps(sorted(names)))"""


@functools.lru_cache(maxsize=None)
def models() -> dict:
    """name -> {batch_size, seq_len, class?, config?} from the project's data file."""
    import yaml

    with open(DATA, encoding="utf-8") as handle:
        return dict(yaml.safe_load(handle)["models"])


def check_params(params: dict) -> str:
    """'' if the suite's own knobs in --model-params are usable, else why not (config fields are checked by
    the model's config class, in the child)."""
    seq_len, dropout = params.get("seq_len"), params.get("dropout")
    if seq_len is not None and (not isinstance(seq_len, int) or isinstance(seq_len, bool) or seq_len < 1):
        return f"--model-params seq_len must be a positive integer, not {seq_len!r}"
    if dropout is not None and (isinstance(dropout, bool) or not isinstance(dropout, (int, float))
                                or not 0 <= dropout < 1):
        return f"--model-params dropout must be a number in [0, 1), not {dropout!r}"
    return ""


def config_fields(config) -> set:
    return set(config.to_dict()) | set(getattr(config, "attribute_map", {}) or {})


def make_config(cls, entry: dict, params: dict):
    """The model's config: its class's defaults, the data file's overrides, then --model-params."""
    config = cls.config_class()
    fields = config_fields(config)
    unknown = sorted(key for key in params if key not in KNOBS and key not in fields)
    if unknown:
        raise ValueError(f"--model-params: {type(config).__name__} has no field {', '.join(map(repr, unknown))} "
                         f"(the suite's own knobs: {', '.join(KNOBS)})")
    for key, value in {**(entry.get("config") or {}), **params}.items():
        if key not in KNOBS:
            setattr(config, key, value)
    if params.get("dropout") is not None:
        for key, value in config.to_dict().items():
            if "drop" in key and isinstance(value, float):
                setattr(config, key, float(params["dropout"]))
    if hasattr(config, "use_cache"):
        config.use_cache = False  # as the harness: one forward pass, no key/value cache
    return config


def has_dropout(config) -> bool:
    return any("drop" in key and isinstance(value, float) and value > 0 for key, value in config.to_dict().items())


def has_labels(inputs: dict) -> bool:
    return any(key in inputs for key in ("labels", "start_positions"))


def model_loss(output):
    return output.loss if getattr(output, "loss", None) is not None else output[0]


SUITE_NAME = "huggingface"
DESCRIPTION = "transformers' models (its data: huggingface_models.yaml)"
ORDER = 80


class HuggingFaceSuite(Suite):
    name = SUITE_NAME
    default_train_step = HARNESS_TRAIN_STEP

    def list_models(self, flags):
        from benchmarks.suites import files

        return files.models_with_params(self.name, [*models(), *huggingface_llm.NAMES], flags, check_params)

    def named_models(self, names, flags):
        from benchmarks.suites import files, library_names

        if importlib.util.find_spec("transformers") is None:
            return []  # nothing to name from; the harness's models are skips that say how to install it
        known = library_names.names_from_child(LIST_CODE, "transformers' model classes")
        for name in names:
            if name not in known:
                raise library_names.unknown_name(name, known, "transformers")
        return files.models_with_params(self.name, names, flags, check_params)

    def skip_reason(self, model_config, experiment, flags) -> Optional[str]:
        if importlib.util.find_spec("transformers") is None:
            return f"the huggingface suite needs transformers, which is not installed: {INSTALL}"
        if huggingface_llm.is_llm(model_config["model_name"]) and experiment.test != "eval":
            return f"{model_config['model_name']} is timed by generate, as the harness times it: eval only"
        return None

    def precision_for(self, model_config, experiment) -> str:
        """An LLM row runs in the dashboard's bf16 on CUDA unless --precision says otherwise."""
        if experiment.precision is None and self._dashboard_bf16(model_config, experiment):
            return LLM_CUDA_PRECISION
        return super().precision_for(model_config, experiment)

    def precision_reason(self, model_config, experiment):
        if experiment.precision is None and self._dashboard_bf16(model_config, experiment):
            return f"the dashboard runs the harness's LLM rows in {LLM_CUDA_PRECISION} on CUDA"
        return None

    def experiment_for(self, model_config, experiment):
        """An LLM row's lengths (the harness's unless asked; whisper's decoder full) and what a compiled one compiles
        (the whole generate unless asked); a length beyond the model's positions is a UsageError. Null elsewhere."""
        name = model_config["model_name"]
        if not huggingface_llm.is_llm(name):
            return super().experiment_for(model_config, experiment)
        prompt, new = huggingface_llm.lengths(name, experiment.prompt_tokens, experiment.new_tokens)
        params = model_config.get("params") or {}
        problem = huggingface_llm.length_problem(
            name, prompt, new, params.get("max_target_positions") or params.get("max_position_embeddings"))
        if problem:
            raise UsageError(problem)
        compiled = (experiment.generation_compile or generation_modes.COMPILE_GENERATE) if experiment.dynamo else None
        return experiment.with_(prompt_tokens=prompt, new_tokens=new, generation_compile=compiled)

    @staticmethod
    def _dashboard_bf16(model_config, experiment) -> bool:
        return huggingface_llm.is_llm(model_config["model_name"]) and experiment.accelerator == "cuda"

    def build(self, model_config, experiment, device, flags):
        for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            os.environ[key] = "1"  # nothing is ever downloaded
        try:
            import transformers
        except ImportError as exc:
            raise ModelSkipped(f"the huggingface suite needs transformers ({exc}); {INSTALL}")
        if importlib.util.find_spec("torchvision") is not None:  # transformers' models import it where it is installed
            from benchmarks.suites.torchvision_suite import import_torchvision

            import_torchvision("the huggingface suite (transformers imports an installed torchvision)")
        name = model_config["model_name"]
        if huggingface_llm.is_llm(name):
            from benchmarks.suites import huggingface_llm_build

            return huggingface_llm_build.build(name, experiment, device, dict(model_config.get("params") or {}),
                                               getattr(flags, "subprocess_memory_limit", None))
        entry = models().get(name) or {"batch_size": NAMED_BATCH_SIZE, "seq_len": sequence_length(name)}  # -k NAME
        params = dict(model_config.get("params") or {})
        problem = check_params(params)
        if problem:
            raise ValueError(problem)
        cls_name = entry.get("class", name)
        cls = getattr(transformers, cls_name, None)
        if cls is None:
            raise ModelSkipped(f"transformers {transformers.__version__} has no class {cls_name}")
        config = make_config(cls, entry, params)
        seq_len = params.get("seq_len") or entry["seq_len"]
        positions = getattr(config, "max_position_embeddings", None)
        if isinstance(positions, int) and 0 < positions < seq_len:
            raise ModelSkipped(f"seq_len {seq_len} is longer than {name}'s max_position_embeddings ({positions})")
        module = cls(config).to(device)
        batch_size = experiment.batch_size or entry["batch_size"]
        inputs = make_inputs(cls_name, config, batch_size, seq_len, getattr(cls, "main_input_name", "input_ids"), name)
        # Dropout draws from each device's own RNG while training: a backend's step differs by design, and
        # --verify does not compare it (train with {"dropout": 0} to verify a training step), except under the
        # harness's step, checked with eager's RNG (a reset seed, Inductor's fallback_random) as the harness does.
        deterministic = experiment.test == "eval" or experiment.harness_train_step or not has_dropout(config)
        return BenchmarkModel(
            module=module, example_inputs=(), example_kwargs={k: v.to(device) for k, v in inputs.items()},
            batch_size=batch_size, loss_fn=model_loss if has_labels(inputs) else None,
            harness_loss=model_loss if has_labels(inputs) else None, tolerance=TOLERANCE[experiment.test] if deterministic else None,
            deterministic=deterministic, after_move=lambda moved: moved.tie_weights(),
            info={"seq_len": seq_len, "batch_size": batch_size, "decoder_inputs": decoder_rule(name, cls_name, config, inputs),
                  "class": cls_name, "parameters": sum(p.numel() for p in module.parameters())},
        )


SUITE = HuggingFaceSuite()
