"""The huggingface suite's inputs, by the rules of PyTorch's dynamo harness (its huggingface runner), written
here as data and small functions: the sequence length per model name, the decoder inputs of encoder-decoder
models, and the labels of each task (always given, eval too, so that both compute the model's own loss).

The rules go by the harness's model name (T5Small, CamemBert ...), not by the transformers class it builds.
Values are drawn from a generator of our own seed, not the harness's global one: the shapes, ranges and which
tensors exist are the harness's, the random values are not.
"""

from __future__ import annotations

# Sequence lengths, tried in this order (the harness's); DEFAULT_SEQ_LEN for a name no rule matches.
SEQ_LEN_RULES = (
    ("prefix", ("Blenderbot",), 128),
    ("prefix", ("GPT2", "Bart", "T5", "PLBart", "MBart"), 1024),
    ("name", ("AllenaiLongformerBase", "BigBird"), 1024),
    ("prefix", ("OPT",), 2048),
    ("contains", ("Reformer",), 4096),
    ("prefix", ("Albert", "Deberta", "Layout", "Electra", "XLNet", "MegatronBert", "Bert", "Roberta"), 512),
    ("name", ("DistillGPT2", "GoogleFnet", "YituTechConvBert", "CamemBert"), 512),
    ("name", ("TrOCRForCausalLM",), 256),
    ("prefix", ("MobileBert",), 128),
    ("prefix", ("Wav2Vec2",), 10000),
)
DEFAULT_SEQ_LEN = 128

# Decoder inputs: these models get decoder_input_ids = input_ids (the very tensor); every other encoder-decoder
# model gets none, and transformers derives them itself (from the labels, shifted right, where labels are given:
# Bart, MBart, PLBart ForConditionalGeneration; else from input_ids).
DECODER_IS_INPUT_PREFIXES = ("T5", "M2M100", "MT5")
DECODER_IS_INPUT_CLASSES = frozenset({
    "BlenderbotModel", "BlenderbotSmallModel", "BlenderbotForConditionalGeneration",
    "BlenderbotSmallForConditionalGeneration", "PegasusModel", "PegasusForConditionalGeneration", "MarianModel",
    "MarianMTModel",
})
# model_info["decoder_inputs"]: which rule ran.
DECODER_INPUT_IDS = "input_ids"  # decoder_input_ids is input_ids
DECODER_FROM_LABELS = "labels_shifted"  # none given; the model shifts the labels right
DECODER_FROM_INPUT_IDS = "input_ids_shifted"  # none given, no labels; the model shifts input_ids right
DECODER_NONE = "none"  # not an encoder-decoder model

# Name endings whose labels are token ids over the whole vocabulary, one per position.
TOKEN_LABELS = ("MaskedLM", "HeadModel", "CausalLM", "DoubleHeadsModel")
NUM_CHOICES = 3  # the harness's multiple-choice inputs: 3 choices per example


def sequence_length(name: str) -> int:
    """The harness's sequence length for a model name."""
    for how, words, length in SEQ_LEN_RULES:
        if ((how == "prefix" and name.startswith(words)) or (how == "name" and name in words)
                or (how == "contains" and any(word in name for word in words))):
            return length
    return DEFAULT_SEQ_LEN


def decoder_is_input(name: str, cls_name: str) -> bool:
    """Whether the harness passes input_ids as the decoder's inputs too."""
    return name.startswith(DECODER_IS_INPUT_PREFIXES) or cls_name in DECODER_IS_INPUT_CLASSES


def decoder_rule(name: str, cls_name: str, config, inputs: dict) -> str:
    """Which decoder inputs `inputs` (made by make_inputs) give the model (model_info["decoder_inputs"])."""
    if "decoder_input_ids" in inputs:
        return DECODER_INPUT_IDS
    if not getattr(config, "is_encoder_decoder", False):
        return DECODER_NONE
    return DECODER_FROM_LABELS if "labels" in inputs else DECODER_FROM_INPUT_IDS


def make_inputs(cls_name: str, config, batch_size: int, seq_len: int, main_input: str = "input_ids",
                name: str = "") -> dict:
    """Random token ids (fixed seed) of the harness's shapes, its decoder inputs and its
    labels for model `name` (default: the class name) of class `cls_name`; for an image model (main input
    pixel_values) random images and, for a classifier, its labels."""
    import torch

    from benchmarks.suites import ModelSkipped

    name = name or cls_name
    generator = torch.Generator().manual_seed(0)

    def ints(high, shape):
        return torch.randint(0, max(int(high), 1), shape, generator=generator, dtype=torch.int64)

    if main_input == "pixel_values":
        size = getattr(config, "image_size", 224)  # ResNetConfig and RegNetConfig have none
        size = size if isinstance(size, int) else size[0]
        inputs = {"pixel_values": torch.randn(batch_size, config.num_channels, size, size, generator=generator)}
        if cls_name.endswith("ForImageClassification"):
            inputs["labels"] = ints(config.num_labels - 1, (batch_size,))
        return inputs
    if main_input != "input_ids":
        raise ModelSkipped(f"the huggingface suite makes input_ids and pixel_values; {cls_name} takes {main_input}")

    vocab = config.vocab_size
    shape = (batch_size, NUM_CHOICES, seq_len) if name.endswith("MultipleChoice") else (batch_size, seq_len)
    ids = ints(1 if name.startswith("Roberta") else vocab, shape)  # Roberta: all zeros, as the harness
    if "Bart" in name and config.eos_token_id is not None:
        ids[:, -1] = config.eos_token_id
    inputs = {"input_ids": ids}
    if decoder_is_input(name, cls_name):
        inputs["decoder_input_ids"] = ids  # the same tensor, as the harness
    inputs.update(labels(name, cls_name, config, batch_size, seq_len, ints))
    return inputs


def labels(name: str, cls_name: str, config, batch_size: int, seq_len: int, ints) -> dict:
    """The labels of the model's task, by its name's ending (the harness's order); {} for a name it has no
    rule for (a class such as BertModel: the runner's generic loss)."""
    import torch

    vocab, tokens, examples = config.vocab_size, (batch_size, seq_len), (batch_size,)
    if name.endswith("PreTraining"):
        if name.startswith(("Electra", "Lxmert")):
            return {"labels": torch.zeros(tokens, dtype=torch.int64)}
        # The harness passes these labels inside a tuple, which the models cannot take: a tensor here.
        order = "sentence_order_label" if cls_name == "AlbertForPreTraining" else "next_sentence_label"
        return {"labels": ints(vocab, tokens), order: torch.zeros(examples, dtype=torch.int64)}
    if name.endswith("QuestionAnswering"):
        return {"start_positions": ints(seq_len, examples), "end_positions": ints(seq_len, examples)}
    if name.endswith(TOKEN_LABELS):
        return {"labels": ints(vocab, tokens)}
    if name.endswith("TokenClassification"):
        return {"labels": ints(config.num_labels - 1, tokens)}
    if name.endswith("MultipleChoice"):
        return {"labels": ints(NUM_CHOICES, examples)}
    if name.endswith("SequenceClassification"):
        return {"labels": ints(config.num_labels - 1, examples)}
    if name.endswith("NextSentencePrediction"):
        return {"labels": torch.zeros(examples, dtype=torch.int64)}
    if name.endswith("ForConditionalGeneration"):
        return {"labels": ints(vocab - 1, tokens)}
    if name != cls_name:  # the harness's extra models (a hub config: T5Small, CamemBert ...): token labels
        return {"labels": ints(vocab, tokens)}
    return {}
