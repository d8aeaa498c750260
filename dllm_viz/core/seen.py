"""What a revision rule reads at decided positions: the raw distribution there, packed (`Seen`).

The step reads logits at the decided positions of the rows whose rule reads them (`Revision.reads`):
the step's own forward (joint_threshold, on a model that can edit) or a verify pass with each position
hidden (wino). `Seen.from_logits` reduces them to what the rules ask, computed with the float ops of the
code they follow (SGLang's softmax at the argmax, WINO's softmax at the token), and no more.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch


@dataclass(frozen=True)
class Seen:
    """The raw distribution at the decided positions a rule reads: packed row-major at the True entries
    of `where`, unpacked to `(A, G)` when a rule asks (`argmax`, `p_argmax`, `p_token`)."""

    where: torch.Tensor  # (A, G) bool: the positions read
    argmax_k: torch.Tensor | None = None  # (K,) long: argmax of the logits (first on ties); None: none read
    p_argmax_k: torch.Tensor | None = None  # (K,) float32: softmax probability of the argmax where it differs
    #                                          from the token, else 0; None: 0 throughout
    p_token_k: torch.Tensor | None = None  # (K,) float32: probability of the token the position holds (see
    #                                         from_logits); None: 0 throughout

    @cached_property
    def argmax(self) -> torch.Tensor:  # (A, G) long; -1 where not read
        out = torch.full(self.where.shape, -1, dtype=torch.long, device=self.where.device)
        return out if self.argmax_k is None else out.masked_scatter(self.where, self.argmax_k)

    @cached_property
    def p_argmax(self) -> torch.Tensor:  # (A, G) float32; 0 where not read
        return self._unpack(self.p_argmax_k)

    @cached_property
    def p_token(self) -> torch.Tensor:  # (A, G) float32; 0 where not read
        return self._unpack(self.p_token_k)

    def _unpack(self, values: torch.Tensor | None) -> torch.Tensor:
        dtype = torch.float32 if values is None else values.dtype  # float64 where a rule reads its code's
        out = torch.zeros(self.where.shape, dtype=dtype, device=self.where.device)
        return out if values is None else out.masked_scatter(self.where, values)

    @classmethod
    def from_logits(cls, logits: torch.Tensor, where: torch.Tensor, current: torch.Tensor,
                    verify: torch.Tensor, *, n_verify: int, wide: torch.Tensor | None = None) -> Seen:
        """`logits (K, 1, V)` at the True entries of `where (A, G)`, row-major; `current (A, G)` the tokens
        (real ids there: `where` holds decided positions); `verify (K,)` bool: the position was read by a
        verify pass (WINO) rather than to be edited, `n_verify` of them.

        Edited rows: the argmax (the first maximum), and where it differs from the token (only there can
        a rewrite happen), softmax(logits) gathered at it and at the token, as SGLang computes them
        (float32); elsewhere the token itself and 0. The argmax differs from the token only where some
        other logit reaches the token's (`_runner_up`, one max pass without indices); only those rows
        get a `max` with indices and a softmax.
        Verify rows: the probability of the token, softmax(logits)[token] (`_token_probs`), and nothing
        else; where `wide (K,)` holds, in float64 (WINO's ``softmax(logits.to(torch.float64))``), and then
        `p_token` is float64 throughout (the other rows' float32 values, widened). Each reads the vocabulary once (twice
        where a rewrite may happen), never more than its rule needs.
        """
        flat = logits[:, 0]  # (K, V)
        if flat.dtype != torch.float32:
            flat = flat.float()
        tokens = current[where]  # (K,)
        K = flat.shape[0]
        arg_k = p_argmax = p_token = None
        if n_verify < K:  # edited rows
            edit = ~verify if n_verify else None
            rows = flat if edit is None else flat[edit]  # (E, V)
            tok = tokens if edit is None else tokens[edit]  # (E,)
            found, probs2 = tok, None
            maybe = _runner_up(rows, tok) >= rows.gather(-1, tok.unsqueeze(-1)).squeeze(-1)  # (E,)
            if bool(maybe.any()):
                found = tok.clone()
                found[maybe] = rows[maybe].max(-1).indices  # the first maximum, as argmax (and faster)
                differs = found != tok  # only there can a rewrite be
                if bool(differs.any()):
                    probs = torch.softmax(rows[differs], dim=-1)  # (D, V)
                    probs2 = torch.zeros(2, tok.shape[0], dtype=torch.float32, device=flat.device)
                    probs2[:, differs] = probs.gather(-1, torch.stack([found[differs], tok[differs]], -1)).T
            if edit is None:
                arg_k = found
                if probs2 is not None:
                    p_argmax, p_token = probs2[0], probs2[1]
            else:
                arg_k = torch.full((K,), -1, dtype=torch.long, device=flat.device).masked_scatter(edit, found)
                if probs2 is not None:
                    p_argmax, p_token = torch.zeros(2, K, dtype=torch.float32, device=flat.device).masked_scatter(
                        edit.expand(2, K), probs2).unbind(0)
        if n_verify:
            rows = flat if n_verify == K else flat[verify]  # (H, V)
            tok = tokens if n_verify == K else tokens[verify]  # (H,)
            p_verify = _token_probs(rows, tok)  # (H,)
            if wide is not None:
                w = wide if n_verify == K else wide[verify]  # (H,)
                if bool(w.any()):
                    p_verify = p_verify.double()
                    source = logits[:, 0] if n_verify == K else logits[:, 0][verify]  # the logits as given
                    p_verify[w] = _token_probs(source[w].double(), tok[w])
                    if p_token is not None:
                        p_token = p_token.double()
            if n_verify == K:
                p_token = p_verify
            else:
                if p_token is None:
                    p_token = torch.zeros(K, dtype=p_verify.dtype, device=flat.device)
                p_token[verify] = p_verify  # (a row of this function's own tensor)
        return cls(where=where, argmax_k=arg_k, p_argmax_k=p_argmax, p_token_k=p_token)


TOKEN_PROB_CHUNK_FLOATS = 1 << 22  # `_token_probs` works on row blocks of at most this many floats (16 MB)


def _token_probs(rows: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
    """`(H,)`: softmax(rows)[tok] of `rows (H, V)`, the probability of each row's token.

    One fused softmax pass per row (the float ops of SGLang's probabilities and of WINO's softmax,
    in float32), in blocks of rows, so that a large vocabulary never needs more than a block's
    probabilities at once."""
    step = max(1, TOKEN_PROB_CHUNK_FLOATS // max(1, rows.shape[-1]))
    index = tok.unsqueeze(-1)  # (H, 1)
    if rows.shape[0] <= step:
        return torch.softmax(rows, dim=-1).gather(-1, index).squeeze(-1)
    return torch.cat([torch.softmax(rows[i : i + step], dim=-1).gather(-1, index[i : i + step]).squeeze(-1)
                      for i in range(0, rows.shape[0], step)])


def _runner_up(rows: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
    """`(E,)`: the largest logit of each row of `rows (E, V)` but the one at its token `tok (E,)`.

    The argmax (the first maximum) differs from the token exactly where this reaches the token's logit.
    One max pass without indices, several times cheaper than `max` with them: the token's entry is set
    to -inf for the pass and written back after it, so `rows` (the caller's logits) leaves unchanged.
    """
    if rows.shape[0] == 0:
        return rows.new_zeros(0)
    if not rows.is_contiguous():  # a view whose entries may alias: work on a copy
        rows = rows.contiguous()
    index = tok.unsqueeze(-1)  # (E, 1)
    with torch.inference_mode():  # the logits may be inference tensors; nothing here needs autograd
        own = rows.gather(-1, index)
        rows.scatter_(-1, index, float("-inf"))
        try:
            best = rows.amax(-1)
        finally:
            rows.scatter_(-1, index, own)
    return best
