"""Replayed logits for the insert/delete rule, and a lockstep runner of SGLang's JointThresholdInDel against ours.

The logits of a row are a function of the row's block alone (a generator seeded by the block's ids), so a
block seen twice gets the same logits twice (the anti-loop rule needs that to be met), and both decoders,
as long as their blocks agree, are fed identical tensors. At each generated position one event is drawn
(keep the token, write a word, DELETE, SPLIT, MASK) and its logit raised by a random height over Gaussian
noise, so some argmaxes clear the thresholds and others do not; `Events` sets the odds per scenario, with
extra odds at the block's last position (splits that push a token out, deletes of the last token).

`lockstep` steps every row through SGLang's own `JointThresholdInDel.step` (one instance per setting, its
rows batched as SGLang's scheduler batches them, through the real `DllmConfig`) and through
`dllm_viz.core.indel.indel_step` (all rows in one call, each with its own settings and width), and compares
after every step the block, SGLang's done flags and every field of its per-request state.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch

from dllm_viz.core.indel import InDelParams, InDelSettings, InDelState, check_edit_tokens, indel_step

VOCAB = 32
MASK_ID, DELETE_ID, SPLIT_ID = 29, 30, 31
WORDS = 29  # ids 0..28 are words


@dataclass(frozen=True)
class Events:
    """Odds of the event drawn at a position (the rest: the word it holds, or a fixed word at a mask)."""

    word: float = 0.10  # another word
    delete: float = 0.04
    split: float = 0.04
    mask: float = 0.03  # MASK (a re-mask at a token; the fallback's case at an original mask)
    last_delete: float = 0.0  # extra odds at the block's last position
    last_split: float = 0.0
    height: tuple[float, float] = (0.0, 7.0)  # the event's logit is raised by U(lo, hi) over N(0, 1) noise
    flip: int = -1  # >= 0: that position of every row swaps two words back and forth (a loop to break)


@dataclass
class Row:
    prompt: list[int]  # committed ids at the start of the block (SGLang's prompt_index)
    settings: InDelSettings
    draft: dict[int, int] = field(default_factory=dict)  # position -> a visible generated token at the start

    def block(self) -> list[int]:
        ids = self.prompt + [MASK_ID] * (self.settings.block_size - len(self.prompt))
        for j, t in self.draft.items():
            ids[j] = t
        return ids


@dataclass(frozen=True)
class Ids:
    """A vocabulary of words, then the mask and the two edit tokens."""

    vocab: int = VOCAB
    mask: int = MASK_ID
    delete: int = DELETE_ID
    split: int = SPLIT_ID
    words: int = WORDS


def row_logits(block: list[int], width: int, prompt: int, events: Events, seed: int, ids: Ids = Ids()) -> torch.Tensor:
    """`(width, ids.vocab)` logits of one row's block (a function of the ids and the seed only)."""
    g = torch.Generator().manual_seed(hash((seed, *block)) & 0x7FFFFFFF)
    logits = torch.randn(width, ids.vocab, generator=g)  # (W, V)
    u = torch.rand(width, generator=g)
    height = events.height[0] + (events.height[1] - events.height[0]) * torch.rand(width, generator=g)
    word = torch.randint(0, ids.words, (width,), generator=g)
    for j in range(prompt, width):
        last = j == width - 1
        cuts = [(events.word, int(word[j])), (events.delete + last * events.last_delete, ids.delete),
                (events.split + last * events.last_split, ids.split), (events.mask, ids.mask)]
        here = block[j] if block[j] != ids.mask else (j * 7 + seed) % ids.words
        acc = 0.0
        for odds, token in cuts:
            if acc <= float(u[j]) < acc + odds:
                here = token
                break
            acc += odds
        if j == events.flip and block[j] in (3, 4):
            here, height[j] = 7 - block[j], 6.0  # 3 <-> 4, confidently
        logits[j, here] += float(height[j])
    return logits


class ReplayedBlocks:
    """A denoiser for `decode`: at each L-aligned chunk of a row's real positions, the script's logits of that
    chunk's ids (`row_logits`), so a block's logits depend on its own ids only, as in the SGLang harness."""

    can_edit = True

    def __init__(self, L: int, events: Events, seed: int) -> None:
        self.L, self.events, self.seed = L, events, seed
        self.mask_token_id, self.delete_token_id, self.split_token_id = MASK_ID, DELETE_ID, SPLIT_ID
        self.vocab_size, self.max_length, self.name = VOCAB, 512, f"replayed-blocks-{L}"

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N = input_ids.shape
        real = [N] * B if attention_mask is None else attention_mask.sum(-1).tolist()
        out = torch.zeros(B, N, VOCAB)
        for b in range(B):
            for start in range(0, int(real[b]) - self.L + 1, self.L):
                chunk = input_ids[b, start:start + self.L].tolist()
                out[b, start:start + self.L] = row_logits(chunk, self.L, 0, self.events, self.seed)
        return out


def sglang_algorithm(settings: InDelSettings, batch: int):
    from sglang.srt.dllm.algorithm import algo_name_to_cls
    from sglang.srt.dllm.config import DllmConfig

    config = DllmConfig(algorithm="JointThresholdInDel", block_size=settings.block_size, mask_id=MASK_ID,
                        max_running_requests=batch, delete_token_id=DELETE_ID, split_token_id=SPLIT_ID,
                        algorithm_config={"threshold": settings.threshold, "edit_threshold": settings.edit_threshold,
                                          "max_post_edit_steps": settings.max_post_edit_steps})
    return algo_name_to_cls["JointThresholdInDel"](config)


@dataclass
class Coverage:
    """What the steps did, counted from our records (the tests assert the scenario reached it)."""

    forwards: int = 0  # row-steps of rows not finished before the step (each one a forward of the request)
    kinds: Counter = field(default_factory=Counter)  # op names and "cut"
    events: Counter = field(default_factory=Counter)  # named situations (see lockstep)


def lockstep(rows: list[Row], events: Events, *, seed: int = 0, coverage: Coverage | None = None) -> Coverage:
    """Run `rows` to the end on both decoders in step; AssertionError at the first difference."""
    cov = coverage if coverage is not None else Coverage()
    tokens = check_edit_tokens(VOCAB, MASK_ID, DELETE_ID, SPLIT_ID)
    A, L = len(rows), max(r.settings.block_size for r in rows)
    params = InDelParams.from_settings([r.settings for r in rows], tokens)
    ours = torch.full((A, L), MASK_ID, dtype=torch.long)
    prompt = torch.zeros(A, L, dtype=torch.bool)
    for a, r in enumerate(rows):
        ours[a, : r.settings.block_size] = torch.tensor(r.block())
        prompt[a, : len(r.prompt)] = True
    state = InDelState.initial(ours, prompt, MASK_ID)
    groups: dict[InDelSettings, list[int]] = {}
    for a, r in enumerate(rows):
        groups.setdefault(r.settings, []).append(a)
    theirs = {}
    for s, members in groups.items():
        algo = sglang_algorithm(s, len(members))
        ids = torch.tensor([i for a in members for i in rows[a].block()], dtype=torch.long)
        fb = SimpleNamespace(batch_size=len(members), input_ids=ids, dllm_prompt_mask=None)
        theirs[s] = (algo, fb, algo.init_step_state(fb))
    for a, r in enumerate(rows):  # SGLang reads the prompt off the block: the rows must say the same
        s = r.settings
        sg_prompt = theirs[s][2][groups[s].index(a)]["prompt_index"]
        assert sg_prompt.tolist() == prompt[a, : s.block_size].tolist(), (a, "prompt")
    steps = max(s.block_size + s.max_post_edit_steps + 2 for s in groups)  # SGLang's max_steps
    for step in range(steps):
        if bool(state.finished.all()):
            break
        logits = torch.full((A, L, VOCAB), -30.0)
        for a, r in enumerate(rows):
            w = r.settings.block_size
            logits[a, :w] = row_logits(ours[a, :w].tolist(), w, len(r.prompt), events, seed)
        cov.forwards += int((~state.finished).sum())
        done_theirs = [False] * A
        for s, (algo, fb, states) in theirs.items():
            members = groups[s]
            full = logits[members, : s.block_size].reshape(-1, VOCAB).clone()
            for a, d in zip(members, algo.step(fb, full, states)):
                done_theirs[a] = d
        out = indel_step(logits, ours, state, params)
        _count(cov, logits, ours, state, out, rows)
        ours, state = out.block, out.state
        for s, (algo, fb, states) in theirs.items():
            w = s.block_size
            for k, a in enumerate(groups[s]):
                where = f"step {step}, row {a}"
                assert fb.input_ids.view(-1, w)[k].tolist() == ours[a, :w].tolist(), where
                st = states[k]
                assert st["is_orig_mask"].tolist() == state.orig[a, :w].tolist(), where
                assert (st["post_edit_steps"], st["num_update_steps"], st["finished"]) == (
                    int(state.post_edit[a]), int(state.updates[a]), bool(state.finished[a])), where
                assert done_theirs[a] == bool(out.done[a]), where
    assert bool(state.finished.all()), "rows did not finish within SGLang's max_steps"
    return cov


def _count(cov: Coverage, logits: torch.Tensor, block: torch.Tensor, state: InDelState, out, rows: list[Row]) -> None:
    """Tally the step's operations and situations (ours; the comparison proves SGLang did the same)."""
    e = out.edits
    for a, r in enumerate(rows):
        ops = e.operations(a)
        cov.kinds.update(kind for _, kind, _ in ops)
        w = r.settings.block_size
        names = {kind for _, kind, _ in ops}
        if {"delete", "split"} <= names:
            cov.events["split and delete in one step"] += 1
        if any(i == w - 1 and kind == "delete" for i, kind, _ in ops):
            cov.events["delete of the last position"] += 1
        if any(i == w - 1 and kind == "split" for i, kind, _ in ops):
            cov.events["split at the last position"] += 1
        if bool(out.cleanup[a]):
            cov.events["clean-up"] += 1
            raw = logits[a, :w].argmax(-1)
            wrote = e.written[a, :w] >= 0
            if bool((wrote & ((raw == MASK_ID) | (raw == DELETE_ID) | (raw == SPLIT_ID))).any()):
                cov.events["clean-up scrubbed MASK/DELETE/SPLIT"] += 1
            if int(out.state.post_edit[a]) >= r.settings.max_post_edit_steps > 0:
                cov.events["budget ran out"] += 1
            if int(out.state.updates[a]) > w + r.settings.max_post_edit_steps:
                cov.events["update limit"] += 1
        if bool(state.finished[a]):
            continue
        masks = (block[a] == MASK_ID) & ~state.prompt[a]
        original = masks & state.orig[a]
        if bool((masks & ~state.orig[a]).any()) and bool(original.any()):
            cov.events["split masks beside original ones"] += 1
        raw = logits[a].argmax(-1)
        if bool((original & (raw == MASK_ID)).any()) and not bool(out.cleanup[a]):
            cov.events["fallback at an original mask"] += 1
        if state.seen.shape[1] and bool((state.seen[a] == block[a]).all(-1).any()) and not bool(out.cleanup[a]):
            cov.events["anti-loop"] += 1
    cov.events["rows moved"] += int(e.moved.sum())
