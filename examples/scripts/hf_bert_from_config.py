# labels: author::ptbench kind::huggingface
"""A Hugging Face model built from its config (random weights, nothing downloaded): a two-layer BERT for
sequence classification, called on random token ids. python hf_bert_from_config.py --max_seq_length 32"""

import torch
from transformers import BertConfig, BertForSequenceClassification

from benchmarks.suites.scripts_api import parameters


def main():
    params = parameters(batch_size=2, max_seq_length=32)
    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, num_labels=3)
    bert = BertForSequenceClassification(config).eval()
    input_ids = torch.randint(0, config.vocab_size, (params.batch_size, params.max_seq_length))
    attention_mask = torch.ones_like(input_ids)
    logits = bert(input_ids=input_ids, attention_mask=attention_mask).logits
    print("logits", tuple(logits.shape))


if __name__ == "__main__":
    main()
