"""Token-level cross-entropy with label smoothing and an ignore index, normalised per valid token."""
import torch
import torch.nn as nn
import torch.nn.functional as F

IGNORE_INDEX = -100


class SmoothedTokenLoss(nn.Module):
    def __init__(self, smoothing=0.1, normalize_by="tokens"):
        super().__init__()
        self.smoothing = smoothing
        self.normalize_by = normalize_by

    def forward(self, logits, labels):
        vocab = logits.size(-1)
        logits = logits.view(-1, vocab)
        labels = labels.view(-1)
        valid = labels != IGNORE_INDEX
        safe_labels = labels.masked_fill(~valid, 0)
        log_probs = F.log_softmax(logits, dim=-1)
        nll = -log_probs.gather(-1, safe_labels.unsqueeze(-1)).squeeze(-1)
        smooth = -log_probs.mean(dim=-1)
        loss = (1.0 - self.smoothing) * nll + self.smoothing * smooth
        loss = loss * valid
        if self.normalize_by == "tokens":
            n_valid = int(valid.sum())
            return loss.sum() / max(n_valid, 1)
        return loss.sum() / labels.shape[0]


def shifted_lm_loss(logits, input_ids, pad_id=0):
    shift_logits = logits[:, :-1].contiguous()
    shift_labels = input_ids[:, 1:].contiguous()
    shift_labels = shift_labels.masked_fill(shift_labels == pad_id, IGNORE_INDEX)
    return F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1),
                           ignore_index=IGNORE_INDEX, label_smoothing=0.1)


def make_labels(n_pad=2):
    y = torch.randint(0, 11, (2, 6))
    y[0, 6 - n_pad:] = IGNORE_INDEX
    return y


def make_inputs():
    return [((), (torch.randn(2, 6, 11), make_labels(n))) for n in (2, 3)]


def make_inputs_batch():
    return [((0.1, "batch"), (torch.randn(2, 6, 11), make_labels(n))) for n in (2, 3)]


def make_inputs_lm():
    return [(torch.randn(2, 6, 11), torch.randint(0, 11, (2, 6))) for _ in range(2)]


EXAMPLES = {"SmoothedTokenLoss": make_inputs, "shifted_lm_loss": make_inputs_lm}


class BatchNormalisedTokenLoss(SmoothedTokenLoss):
    """Same loss, normalised by the number of sequences."""


EXAMPLES["BatchNormalisedTokenLoss"] = make_inputs_batch
