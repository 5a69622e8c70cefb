"""A :class:`~placement.perf.transformer.TransformerSpec` built in plain torch, for ``measure``.

The shapes the performance model prices: fused QKV projection with grouped-query attention, rotary or learned
positions, causal ``scaled_dot_product_attention`` (fused), the output projection, a GELU or SwiGLU MLP (or
top-k routed experts), LayerNorm or RMSNorm, dropout on the residual branches when the spec has it, a
(padded) vocabulary embedding and output layer (tied or not) and the cross-entropy in fp32. Only imported
once torch is known to be installed.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .transformer import Norm, TransformerSpec

DROPOUT = 0.1


def _norm(spec: TransformerSpec) -> nn.Module:
    h = spec.hidden
    return nn.RMSNorm(h, eps=1e-5) if spec.norm is Norm.RMSNORM else nn.LayerNorm(h, eps=1e-5, bias=spec.bias)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    """Self-attention with ``groups`` key/value heads (grouped-query attention) and fused causal SDPA."""

    def __init__(self, spec: TransformerSpec) -> None:
        super().__init__()
        self.a, self.g, self.d = spec.heads, spec.groups, spec.head_dim
        self.qkv = nn.Linear(spec.hidden, (self.a + 2 * self.g) * self.d, bias=spec.bias)
        self.proj = nn.Linear(self.a * self.d, spec.hidden, bias=spec.bias)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split([self.a * self.d, self.g * self.d, self.g * self.d], dim=-1)
        q = q.view(b, s, self.a, self.d).transpose(1, 2)
        k = k.view(b, s, self.g, self.d).transpose(1, 2)
        v = v.view(b, s, self.g, self.d).transpose(1, 2)
        if rope is not None:
            q, k = _rotate(q, *rope), _rotate(k, *rope)
        if self.g != self.a:  # each key/value head serves a/g query heads (explicit: every SDPA backend runs it)
            k, v = k.repeat_interleave(self.a // self.g, dim=1), v.repeat_interleave(self.a // self.g, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, s, self.a * self.d))


class MLP(nn.Module):
    """GELU MLP, or SwiGLU (one fused gate-and-up projection of width ``2 f``)."""

    def __init__(self, spec: TransformerSpec) -> None:
        super().__init__()
        self.swiglu = spec.swiglu
        self.fc1 = nn.Linear(spec.hidden, (2 if spec.swiglu else 1) * spec.ffn, bias=spec.bias)
        self.fc2 = nn.Linear(spec.ffn, spec.hidden, bias=spec.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc1(x)
        if self.swiglu:
            gate, up = y.chunk(2, dim=-1)
            return self.fc2(F.silu(gate) * up)
        return self.fc2(F.gelu(y))


class MoE(nn.Module):
    """Top-k routed experts: a router, softmax, top-k, and each expert on the tokens routed to it."""

    def __init__(self, spec: TransformerSpec) -> None:
        super().__init__()
        self.topk = spec.moe_topk
        self.router = nn.Linear(spec.hidden, spec.num_experts, bias=False)
        self.experts = nn.ModuleList(MLP(spec) for _ in range(spec.num_experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = torch.softmax(self.router(flat), dim=-1, dtype=torch.float32).topk(self.topk, dim=-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (chosen == e).nonzero(as_tuple=True)
            if rows.numel():
                y = expert(flat[rows]) * weights[rows, slot, None].to(flat.dtype)
                out = out.index_add(0, rows, y.to(out.dtype))
        return out.view_as(x)


class Block(nn.Module):
    """Pre-norm transformer layer: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, spec: TransformerSpec) -> None:
        super().__init__()
        self.norm1, self.norm2 = _norm(spec), _norm(spec)
        self.attn = Attention(spec)
        self.mlp: nn.Module = MoE(spec) if spec.moe else MLP(spec)
        self.dropout = DROPOUT if spec.dropout else 0.0

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        x = x + F.dropout(self.attn(self.norm1(x), rope), self.dropout, self.training)
        return x + F.dropout(self.mlp(self.norm2(x)), self.dropout, self.training)


class GPT(nn.Module):
    """Embedding, ``layers`` blocks, final norm, output layer and cross-entropy loss."""

    def __init__(self, spec: TransformerSpec, recompute: bool = False) -> None:
        super().__init__()
        self.spec, self.recompute = spec, recompute
        vocab = spec.padded_vocab(1)
        self.embed = nn.Embedding(vocab, spec.hidden)
        self.pos = None if spec.rope else nn.Embedding(spec.positions, spec.hidden)
        self.blocks = nn.ModuleList(Block(spec) for _ in range(spec.layers))
        self.norm = _norm(spec)
        self.output = None if spec.tied_embeddings else nn.Linear(spec.hidden, vocab, bias=False)
        d = spec.head_dim
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        angles = torch.outer(torch.arange(spec.seq_length, dtype=torch.float32), inv)
        self.register_buffer("cos", torch.cat((angles, angles), dim=-1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((angles, angles), dim=-1).sin(), persistent=False)

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        s = tokens.shape[1]
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(s, device=tokens.device))
        x = F.dropout(x, DROPOUT if self.spec.dropout else 0.0, self.training)
        rope = (self.get_buffer("cos")[:s], self.get_buffer("sin")[:s]) if self.spec.rope else None
        for block in self.blocks:
            if self.recompute:
                x = torch.utils.checkpoint.checkpoint(block, x, rope, use_reentrant=False)
            else:
                x = block(x, rope)
        x = self.norm(x)
        weight = self.embed.weight if self.output is None else self.output.weight
        logits = F.linear(x, weight)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.reshape(-1))


def build(spec: TransformerSpec, device: Any, recompute: bool = False) -> GPT:
    """The model on ``device`` with fp32 parameters (mixed precision runs it under autocast), initialised there."""
    with torch.device(device):
        return GPT(spec, recompute)
