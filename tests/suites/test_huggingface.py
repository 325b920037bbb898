"""The huggingface suite: the harness's model list (a data file), offline builds from config classes with
--model-params (config fields and the suite's knobs), one clear error for an unknown config field, the skip
without transformers; one sweep of an encoder, a decoder and an encoder-decoder, eager and PyTorch/XLA lazy,
eval and train, with --verify."""

import argparse
import importlib.util

import pytest

from helpers import XLA, call_runner, read_jsonl, run_runner

from benchmarks.config import experiment_config
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.suites import huggingface, huggingface_llm
from benchmarks.suites.huggingface_inputs import make_inputs

MODELS = ["BertForMaskedLM", "GPT2ForSequenceClassification", "T5ForConditionalGeneration"]
# Field names every one of the three configs knows (GPT2 and T5 map them to their own names).
TINY = ('{"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "vocab_size": 128, '
        '"seq_len": 16, "dropout": 0}')


def options(params=None):
    return argparse.Namespace(model_params=params)


def test_the_harness_list_with_its_batch_sizes_and_sequence_lengths():
    names = [m["model_name"] for m in huggingface.SUITE.list_models(options())]
    assert len(names) == 48 + 7 and set(MODELS + ["DistilBertForMaskedLM", "AlbertForMaskedLM", "T5Small"]) <= set(names)
    assert names[48:] == list(huggingface_llm.NAMES)  # the LLM rows after the harness's list
    data = huggingface.models()
    assert data["BertForMaskedLM"] == {"batch_size": 32, "seq_len": 512}
    assert data["GPT2ForSequenceClassification"]["config"] == {"pad_token_id": 0}  # batches of several sequences
    assert data["DistillGPT2"]["class"] == "GPT2LMHeadModel"
    assert all(m["params"] == {"seq_len": 8} for m in huggingface.SUITE.list_models(options('{"seq_len": 8}')))


@pytest.mark.parametrize("params, message", [
    ('{"seq_len": 0}', "seq_len must be a positive integer"),
    ('{"dropout": 1.5}', "dropout must be a number in [0, 1)"),
])
def test_bad_knobs_are_usage_errors(params, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        huggingface.SUITE.list_models(options(params))
    result = call_runner("--suite-name=huggingface", f"--model-params={params}", "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and message in result.stderr


@pytest.mark.requires_loadable_torchvision
def test_config_fields_and_knobs_are_applied_offline():
    import transformers

    config = huggingface.make_config(transformers.T5ForConditionalGeneration, {},
                                     {"num_hidden_layers": 2, "hidden_size": 16, "dropout": 0, "seq_len": 8})
    assert (config.num_layers, config.d_model, config.dropout_rate, config.use_cache) == (2, 16, 0.0, False)
    with pytest.raises(ValueError, match="BertConfig has no field 'no_such_field'"):
        huggingface.make_config(transformers.BertForMaskedLM, {}, {"no_such_field": 1})
    inputs = make_inputs("T5ForConditionalGeneration", config, 2, 8)
    assert set(inputs) == {"input_ids", "decoder_input_ids", "labels"} and inputs["labels"].shape == (2, 8)
    qa = make_inputs("BertForQuestionAnswering", transformers.BertConfig(), 3, 8)
    assert qa["start_positions"].shape == (3,)


def test_image_inputs_take_the_configs_image_size_or_224_where_it_has_none():
    import transformers

    resnet = make_inputs("ResNetForImageClassification", transformers.ResNetConfig(), 2, 8,
                                     main_input="pixel_values")  # ResNetConfig has no image_size
    assert resnet["pixel_values"].shape == (2, 3, 224, 224) and resnet["labels"].shape == (2,)
    vit = make_inputs("ViTModel", transformers.ViTConfig(image_size=32), 1, 8, main_input="pixel_values")
    assert set(vit) == {"pixel_values"} and vit["pixel_values"].shape == (1, 3, 32, 32)


def test_llm_rows_run_eval_only_and_in_the_dashboards_bf16_on_cuda():
    eval_cpu = experiment_config.ExperimentConfig("cpu", None, None, "eval")
    llm, bert = {"model_name": "Qwen/Qwen3-0.6B"}, {"model_name": "BertForMaskedLM"}
    assert huggingface.SUITE.skip_reason(llm, eval_cpu, options()) is None
    assert "eval only" in huggingface.SUITE.skip_reason(llm, eval_cpu.with_(test="train"), options())
    assert huggingface.SUITE.precision_for(llm, eval_cpu) == "fp32"
    cuda = eval_cpu.with_(accelerator="cuda")
    assert huggingface.SUITE.precision_for(llm, cuda) == "bf16" and "bf16 on CUDA" in huggingface.SUITE.precision_reason(llm, cuda)
    assert huggingface.SUITE.precision_for(llm, cuda.with_(precision="fp16")) == "fp16"
    assert huggingface.SUITE.precision_for(bert, cuda) == "fp32" and huggingface.SUITE.precision_reason(bert, cuda) is None


def test_llm_rows_carry_their_lengths_and_what_they_compile_and_no_other_config_does():
    suite, inductor = huggingface.SUITE, experiment_config.ExperimentConfig("cpu", None, "inductor", "eval")
    qwen = suite.experiment_for({"model_name": "Qwen/Qwen3-0.6B"}, inductor)
    assert (qwen.prompt_tokens, qwen.new_tokens, qwen.generation_compile) == (1000, 2000, "generate")
    asked = inductor.with_(prompt_tokens=32, new_tokens=16, generation_compile="forward")
    assert suite.experiment_for({"model_name": "Qwen/Qwen3-0.6B"}, asked) == asked  # idempotent (Suite.resolve)
    eager = suite.experiment_for({"model_name": "openai/whisper-tiny"}, asked.with_(dynamo=None))
    assert (eager.prompt_tokens, eager.new_tokens, eager.generation_compile) == (None, 16, None)  # its prompt is audio
    bert = suite.experiment_for({"model_name": "BertForMaskedLM"}, asked)
    assert (bert.prompt_tokens, bert.new_tokens, bert.generation_compile) == (None, None, None)
    with pytest.raises(UsageError, match="need 65 positions; the model has 64"):
        suite.experiment_for({"model_name": "Qwen/Qwen3-0.6B", "params": {"max_position_embeddings": 64}}, asked.with_(
            prompt_tokens=49))


def test_lengths_beyond_a_models_positions_are_one_line_and_exit_2_before_anything_runs():
    result = call_runner("--suite-name=huggingface", "-k", "whisper", "--new-tokens=448", "--accelerator=cpu",
                         "--xla=None", "--dry-run", check_rc=2)
    assert result.stderr == ("experiment_runner.py: error: openai/whisper-tiny: its start token + 448 new tokens need "
                             "449 positions; the model has 448\n")
    listed = call_runner("--suite-name=huggingface", "-k", "Qwen3|Bert", "--prompt-tokens=32", "--new-tokens=16",
                         "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=inductor", "--dry-run")
    assert listed.stdout.count('"prompt_tokens": 32, "new_tokens": 16') == 2  # Qwen3's two configs, no other
    assert listed.stdout.count('"generation_compile": "generate"') == 1


def test_without_transformers_every_config_is_a_skip_saying_how_to_install(monkeypatch):
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else found(name, *a))
    experiment = experiment_config.ExperimentConfig("cpu", None, None, "eval")
    reason = huggingface.SUITE.skip_reason({"model_name": "BertForMaskedLM"}, experiment, options())
    assert "needs transformers" in reason and "pip install transformers==" in reason


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf")
    common = ["--suite-name=huggingface", "--accelerator=cpu", "--dynamo=None", "--batch-size=2", "--repeat=1",
              "--warmup=1", f"--output-dirname={out}"]
    run_runner(*common, "-k", "^(" + "|".join(MODELS) + ")$", "--xla=None", "--test=eval", "--test=train",
               f"--model-params={TINY}", "--verify", check_rc=0)
    # On XLA: the encoder-decoder, and the encoder's training step (its tied embeddings must stay tied there).
    # (Where torch-xla can't run, these configs are dropped, saying why: nothing to run.)
    run_runner(*common, "-k", f"^{MODELS[2]}$", "--xla=PJRT", "--test=eval", "--test=train", f"--model-params={TINY}",
               "--verify", check_rc=0)
    if XLA:
        run_runner(*common, "-k", f"^{MODELS[0]}$", "--xla=PJRT", "--test=train", f"--model-params={TINY}", "--verify",
                   check_rc=0)
    run_runner(*common, "-k", "^BertForMaskedLM$", "--xla=None", "--test=eval",
               '--model-params={"num_hidden_layers": 1, "no_such_field": 3}', check_rc=1)  # an error record
    return read_jsonl(out / "results.jsonl")


@pytest.mark.integration
@pytest.mark.requires_loadable_torchvision
def test_an_encoder_a_decoder_and_an_encoder_decoder_run_and_verify_on_eager_and_xla(sweep):
    got = {(r["model"]["model_name"], r["experiment"]["xla"], r["experiment"]["test"]): r for r in sweep
           if "no_such_field" not in r["model"]["params"]}
    on_xla = {(MODELS[2], "PJRT", "eval"), (MODELS[2], "PJRT", "train"), (MODELS[0], "PJRT", "train")}
    assert set(got) == {(m, None, t) for m in MODELS for t in ("eval", "train")} | (on_xla if XLA else set())
    for key, record in got.items():
        assert record["status"] == "ok", (key, record.get("error"))
        assert record["verification_code"] == "PASS", (key, record.get("verification_message"))
        assert record["verification_tolerance"] == (1e-3 if key[2] == "eval" else 1e-2)
        assert record["experiment"]["batch_size"] == 2 and record["model_info"]["seq_len"] == 16
    if XLA:
        assert got[("T5ForConditionalGeneration", "PJRT", "train")]["metrics"]["xla_ExecuteTime_number"][0] >= 1


@pytest.mark.integration
@pytest.mark.requires_loadable_torchvision
def test_an_unknown_config_field_is_one_clear_error_record(sweep):
    (record,) = [r for r in sweep if "no_such_field" in r["model"]["params"]]
    assert record["status"] == "error" and record["error"]["phase"] == "load"
    assert "BertConfig has no field 'no_such_field'" in record["error"]["message"]


@pytest.mark.integration
@pytest.mark.requires_loadable_torchvision
def test_any_transformers_model_class_runs_by_name_and_an_unknown_one_names_close_matches(tmp_path):
    tiny = '{"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64, "seq_len": 16}'
    run_runner("--suite-name=huggingface", "-k", "^BertModel$", "-k", "^ViTForImageClassification$",
               "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--test=train", "--batch-size=2",
               f"--model-params={tiny}", "--repeat=1", "--warmup=0", f"--output-dirname={tmp_path}", check_rc=0)
    records = {(r["model"]["model_name"], r["experiment"]["test"]): r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert set(records) == {(m, t) for m in ("BertModel", "ViTForImageClassification") for t in ("eval", "train")}
    for key, record in records.items():  # BertModel: no labels, the generic loss; ViT: images and its labels
        assert record["status"] == "ok", (key, record.get("error"))
        assert record["experiment"]["batch_size"] == 2 and record["model_info"]["class"] == key[0]
    unknown = run_runner("--suite-name=huggingface", "-k", "BertModl", "--dry-run", check_rc=2)
    assert unknown.stderr.count("\n") == 1 and "transformers has no model 'BertModl'" in unknown.stderr
    assert "close matches: BertModel" in unknown.stderr


# ---------------------------------------------------------------- the harness's inputs

def test_every_listed_sequence_length_is_the_harness_rule_for_the_name():
    from benchmarks.suites.huggingface_inputs import sequence_length

    assert {name: entry["seq_len"] for name, entry in huggingface.models().items()} == {
        name: sequence_length(name) for name in huggingface.models()}
    assert huggingface.models()["CamemBert"]["seq_len"] == 512  # a hub config of the harness's 512 list
    expected = {"BlenderbotSmallForCausalLM": 128, "PLBartForCausalLM": 1024, "AllenaiLongformerBase": 1024,
                "OPTForCausalLM": 2048, "ReformerModelWithLMHead": 4096, "TrOCRForCausalLM": 256,
                "MobileBertForMaskedLM": 128, "DistilBertForMaskedLM": 128, "BertModel": 512, "ViTModel": 128}
    assert {name: sequence_length(name) for name in expected} == expected


@pytest.mark.requires_loadable_torchvision
def test_decoder_inputs_are_input_ids_only_where_the_harness_gives_them_and_labels_by_its_name():
    import transformers

    from benchmarks.suites.huggingface_inputs import decoder_rule, make_inputs

    def made(name, cls_name=None):
        cls = getattr(transformers, cls_name or name)
        config = cls.config_class()
        inputs = make_inputs(cls.__name__, config, 2, 8, name=name)
        return inputs, decoder_rule(name, cls.__name__, config, inputs)

    for name in ("BartForConditionalGeneration", "MBartForConditionalGeneration", "PLBartForConditionalGeneration"):
        inputs, rule = made(name)  # transformers shifts the labels right into the decoder
        assert set(inputs) == {"input_ids", "labels"} and rule == "labels_shifted", name
        assert (inputs["input_ids"][:, -1] == transformers.AutoConfig.for_model(
            getattr(transformers, name).config_class.model_type).eos_token_id).all()
    for name, cls_name in (("T5ForConditionalGeneration", None), ("T5Small", "T5ForConditionalGeneration"),
                           ("PegasusForConditionalGeneration", None), ("M2M100ForConditionalGeneration", None)):
        inputs, rule = made(name, cls_name)
        assert inputs["decoder_input_ids"] is inputs["input_ids"] and rule == "input_ids", name
    inputs, rule = made("BartModel")  # no labels: the model shifts input_ids
    assert set(inputs) == {"input_ids"} and rule == "input_ids_shifted"
    inputs, rule = made("BertForMaskedLM")
    assert rule == "none" and inputs["labels"].shape == (2, 8)
    choice, _ = made("BertForMultipleChoice")
    assert choice["input_ids"].shape == (2, 3, 8) and choice["labels"].shape == (2,) and choice["labels"].max() < 3
    tokens, _ = made("BertForTokenClassification")
    assert tokens["labels"].shape == (2, 8)
    nsp, _ = made("BertForNextSentencePrediction")
    assert nsp["labels"].tolist() == [0, 0]
    roberta, _ = made("RobertaForCausalLM")
    assert roberta["input_ids"].max() == 0  # the harness's Roberta ids are all zeros


TINY_BART = ('{"encoder_layers": 1, "decoder_layers": 1, "d_model": 16, "encoder_attention_heads": 2, '
             '"decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "vocab_size": 64, '
             '"max_position_embeddings": 32, "seq_len": 12}')


@pytest.mark.integration
@pytest.mark.requires_loadable_torchvision
def test_bart_runs_on_the_labels_as_its_decoder_inputs_and_the_record_says_so(tmp_path):
    from benchmarks.child.accuracy import golden_store, tensor_tree_file

    store = tmp_path / "golden"
    run_runner("--suite-name=huggingface", "-k", "^BartForConditionalGeneration$", "--accelerator=cpu", "--xla=None",
               "--dynamo=None", "--test=eval", "--batch-size=2", f"--model-params={TINY_BART}", "--repeat=1",
               "--warmup=0", f"--save-golden={store}", f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok", record.get("error")
    info = record["model_info"]
    assert (info["seq_len"], info["batch_size"], info["decoder_inputs"]) == (12, 2, "labels_shifted")
    experiment = experiment_config.ExperimentConfig("cpu", None, None, "eval", batch_size=2)
    entry = golden_store.entry_dir(str(store), record["model"], experiment)
    _, kwargs = tensor_tree_file.load(f"{entry}/{golden_store.FILES['inputs']}")
    assert set(kwargs) == {"input_ids", "labels"} and tuple(kwargs["input_ids"].shape) == (2, 12)
