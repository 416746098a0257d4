"""A tiny random-weight transformers BertModel: its forward is decorated, as in every transformers model."""
import torch
from transformers import BertConfig, BertModel


class TinyBert(BertModel):
    def __init__(self):
        super().__init__(BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=64, max_position_embeddings=64))


def dynalint_inputs():
    return [((), (torch.randint(0, 128, (2, 8)),)) for _ in range(3)]
