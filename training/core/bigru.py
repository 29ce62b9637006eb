"""A bidirectional GRU that exports to ONNX and masks padding exactly: the backward GRU reads each
sequence reversed within its own length, so no state gathered at `length - 1` has seen a pad."""
from __future__ import annotations

import torch
from torch import nn


def positions(lengths_like: torch.Tensor) -> torch.Tensor:
    """[N, L] matrix of 0..L-1 built from a tensor's shape (an arange that stays dynamic in ONNX)."""
    return torch.cumsum(torch.ones_like(lengths_like, dtype=torch.long), dim=1) - 1


def gather_time(states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """states [N, L, H], index [N] -> states[n, index[n]] as [N, H]."""
    expanded = index.view(-1, 1, 1).expand(-1, 1, states.shape[2])
    return states.gather(1, expanded).squeeze(1)


def reverse_within_length(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's first `length` steps reversed; padded steps stay where they are."""
    pos = positions(x[:, :, 0])
    rev = lengths.view(-1, 1) - 1 - pos
    rev = torch.where(rev >= 0, rev, pos)
    return x.gather(1, rev.unsqueeze(-1).expand(-1, -1, x.shape[2]))


class BiGRU(nn.Module):
    """Final states of a bidirectional GRU, [N, 2H], for padded input [N, L, E] and lengths [N] (>= 1)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.forward_gru = nn.GRU(input_size, hidden_size, batch_first=True)
        self.backward_gru = nn.GRU(input_size, hidden_size, batch_first=True)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        last = lengths - 1
        forward_states, _ = self.forward_gru(x)
        backward_states, _ = self.backward_gru(reverse_within_length(x, lengths))
        return torch.cat([gather_time(forward_states, last), gather_time(backward_states, last)], dim=-1)
