"""child/accuracy/generation_verify.py's pieces that need no model: the fp64 reference's inputs (eager's first tokens
appended
to what the decoder reads) and the logits generate masks, left out on every side before the harness's rule judges."""

import torch

from benchmarks.child.accuracy import generation_verify


def test_eager_first_tokens_extend_the_prompt_and_its_mask_or_an_encoder_decoders_decoder_inputs():
    prompt = {"input_ids": torch.tensor([[5, 6, 7]]), "attention_mask": torch.ones(1, 3, dtype=torch.int64)}
    found = generation_verify.with_tokens(prompt, torch.tensor([[9]]))
    assert found["input_ids"].tolist() == [[5, 6, 7, 9]] and found["attention_mask"].tolist() == [[1, 1, 1, 1]]
    assert prompt["input_ids"].tolist() == [[5, 6, 7]]  # the inputs generate ran are left as they were
    speech = {"input_features": torch.zeros(1, 80, 3000), "decoder_input_ids": torch.tensor([[50258]])}
    found = generation_verify.with_tokens(speech, torch.tensor([[42]]))
    assert found["decoder_input_ids"].tolist() == [[50258, 42]] and found["input_features"] is speech["input_features"]
    assert generation_verify.with_tokens(prompt, torch.empty(1, 0, dtype=torch.int64))["input_ids"].shape == (1, 3)


def test_the_logits_generate_masked_on_either_side_are_left_out_of_all_three():
    inf = float("-inf")
    result = [torch.tensor([[1.0, inf, 3.0, 4.0]])]
    eager = [torch.tensor([[1.5, inf, 3.5, inf]])]
    fp64 = [torch.tensor([[1.2, 2.0, 3.2, 4.2]], dtype=torch.float64)]
    kept_result, kept_eager, kept_fp64 = generation_verify.unmasked(result, eager, fp64)
    assert kept_result[0].tolist() == [[1.0, 3.0]] and kept_eager[0].tolist() == [[1.5, 3.5]]
    assert kept_fp64[0].tolist() == [[1.2, 3.2]] and kept_fp64[0].dtype == torch.float64
