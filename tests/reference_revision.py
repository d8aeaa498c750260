"""Independent, deliberately plain references of the revision rules: one request, Python loops.

Each is written from the rule as its paper and code state it (and as docs/shipped_samplers.md
states the count form dllm-viz runs), not from dllm_viz/core/revision.py, so the decoder is
checked against the rule. Temperature 0 throughout: the token is the argmax of the raw logits
(the mask token never a candidate). Every function returns the canvas after each step, the
confirmations, the positions taken back and the rewrites of each step.
"""
from __future__ import annotations

import torch

MASK_OUT = float("-inf")


def _logits(model, canvas: list[int]) -> torch.Tensor:
    """`(N, V)` float32 raw logits of one canvas, the mask token removed from the candidates."""
    ids = torch.tensor([canvas])
    with torch.no_grad():
        out = model(ids, torch.ones_like(ids, dtype=torch.bool))[0].float().clone()
    out[:, model.mask_token_id] = MASK_OUT
    return out


def _hidden_logits(model, canvas: list[int], position: int) -> torch.Tensor:
    """`(V,)` logits at `position` with its own token replaced by the mask: what it predicts without itself."""
    hidden = list(canvas)
    hidden[position] = model.mask_token_id
    return _logits(model, hidden)[position]


def _best(scores: dict[int, float], n: int, *, largest: bool = True) -> list[int]:
    """The n best keys by score, ties to the earlier position."""
    sign = -1.0 if largest else 1.0
    return sorted(scores, key=lambda i: (sign * scores[i], i))[: max(0, n)]


def _record(canvas, P, confirmed, remasked=(), edited=()):
    return {"canvas": canvas[P:], "confirmed": sorted(confirmed), "remasked": sorted(remasked),
            "edited": sorted(edited)}


def fixed_quota(block_size: int, steps: int, block_step: int) -> int:
    """LLaDA's get_num_transfer_tokens: M // s per step, the remainder one each to the first steps."""
    return block_size // steps + (1 if block_step < block_size % steps else 0)


def remdm_reference(model, prompt, *, gen_length, steps, sigma, eta, alpha_on=0.9, loop_steps=0, seed=0):
    """ReMDM in counts (kuleshov-group/remdm, diffusion.py, `_ddpm_caching_update`), one block, fixed_steps.

    Per step, with d decided tokens, m masks and the quota q: sigma_max = min(1, (m - q) / d) (ReMDM's
    min(1, (1 - alpha_s) / alpha_t) with the visible counts); each decided token goes back to [MASK]
    when its uniform < sigma (cap min(eta, sigma_max), rescale eta * sigma_max, conf softmax(-c) *
    sigma_max with c the confidence it was decided with, loop eta inside the loop), at most m - q of
    them (the smallest uniforms); then q + r masks are confirmed. Loop: once d / (d + m) >= alpha_on,
    loop_steps steps that take back r and confirm r, the schedule paused.
    """
    mask, P, G = model.mask_token_id, len(prompt), gen_length
    gen = torch.Generator().manual_seed(seed)
    canvas = list(prompt) + [mask] * G
    decided_conf = [0.0] * G
    block_step, loops, out = 0, 0, []
    while mask in canvas[P:]:
        u = torch.rand(2, G, generator=gen)[1]  # the step's second uniform (the first is the draw's)
        probs = torch.softmax(_logits(model, canvas)[P:], -1)
        masked = [i for i in range(G) if canvas[P + i] == mask]
        decided = [i for i in range(G) if canvas[P + i] != mask]
        conf = {i: float(probs[i].max()) for i in masked}
        d, m = len(decided), len(masked)
        q = min(m, fixed_quota(G, steps, block_step))
        room = m - q
        sigma_max = torch.tensor(min(1.0, room / d) if d else 0.0, dtype=torch.float32)  # float32, as the decoder
        eta32 = torch.tensor(eta, dtype=torch.float32)
        in_loop = sigma == "loop" and m > 0 and d / (d + m) >= alpha_on and loops < loop_steps
        if sigma == "cap":
            sig = {i: float(torch.minimum(eta32, sigma_max)) for i in decided}
        elif sigma == "rescale":
            sig = {i: float(eta32 * sigma_max) for i in decided}
        elif sigma == "conf":
            w = torch.softmax(-torch.tensor([decided_conf[i] for i in decided], dtype=torch.float32), 0) if d else []
            sig = {i: float(w[j] * sigma_max) for j, i in enumerate(decided)}
        else:
            sig = {i: (float(eta32) if in_loop else 0.0) for i in decided}
        hits = [i for i in decided if float(u[i]) < sig[i]]
        remasked = sorted(hits, key=lambda i: (float(u[i]), i))[: (m if in_loop else room)]
        count = len(remasked) if in_loop else q + len(remasked)
        chosen = _best(conf, count)
        for i in chosen:
            canvas[P + i] = int(probs[i].argmax())
            decided_conf[i] = conf[i]
        for i in remasked:
            canvas[P + i] = mask
            decided_conf[i] = 0.0
        if in_loop:
            loops += 1
        else:
            block_step += 1
        out.append(_record(canvas, P, chosen, remasked))
    return out


def rcr_reference(model, prompt, *, gen_length, steps):
    """MDPO's Running Confidence Remasking (autonomousvision/mdpo, src/mdlm_generation_utils.py,
    `diffusion_generate(rcr=True)`), one block, fixed_steps quotas.

    Every mask is a candidate with this step's confidence, every decided token with the confidence it
    was decided with (its `overtime_confidence`); the d + q best stay or become visible (ties to the
    earlier position), every other decided token goes back to [MASK].
    """
    mask, P, G = model.mask_token_id, len(prompt), gen_length
    canvas = list(prompt) + [mask] * G
    running = [0.0] * G
    out = []
    for step in range(steps):
        probs = torch.softmax(_logits(model, canvas)[P:], -1)
        masked = [i for i in range(G) if canvas[P + i] == mask]
        decided = [i for i in range(G) if canvas[P + i] != mask]
        score = {i: float(probs[i].max()) for i in masked} | {i: running[i] for i in decided}
        keep = set(_best(score, len(decided) + fixed_quota(G, steps, step)))
        confirmed = [i for i in masked if i in keep]
        remasked = [i for i in decided if i not in keep]
        for i in confirmed:
            canvas[P + i], running[i] = int(probs[i].argmax()), score[i]
        for i in remasked:
            canvas[P + i] = mask
        out.append(_record(canvas, P, confirmed, remasked))
    assert mask not in canvas[P:]
    return out


def wino_reference(model, prompt, *, gen_length, block_length, threshold, threshold_back):
    """WINO (Feng-Hong/WINO-DLLM, LLaDA/decoding.py, `decoding_wino`) at temperature 0.

    Per block, last_accept = 30; while the block holds a mask: draft every mask whose float64
    probability > threshold (the top max_accept = min(max(int(0.7 m), 5), 20) when more, the best one
    when none); verify every decided token of the block by its probability with itself hidden; when
    more than one was drafted, take back those < threshold_back, or only the last_accept - 1 lowest
    when they are at least last_accept; last_accept = the drafts of this step.
    """
    mask, P, G = model.mask_token_id, len(prompt), gen_length
    canvas = list(prompt) + [mask] * G
    out = []
    for b in range(G // block_length):
        lo, hi = b * block_length, (b + 1) * block_length
        last_accept = 30
        while any(canvas[P + i] == mask for i in range(lo, hi)):
            probs = torch.softmax(_logits(model, canvas)[P:].double(), -1)
            masked = [i for i in range(lo, hi) if canvas[P + i] == mask]
            decided = [i for i in range(lo, hi) if canvas[P + i] != mask]
            conf = {i: float(probs[i].max()) for i in masked}
            back = {i: float(torch.softmax(_hidden_logits(model, canvas, P + i).double(), -1)[canvas[P + i]])
                    for i in decided}
            max_accept = min(max(int(len(masked) * 0.7), 5), 20)
            drafts = [i for i in masked if conf[i] > threshold]
            if len(drafts) > max_accept:
                drafts = _best(conf, max_accept)
            elif not drafts:
                drafts = _best(conf, 1)
            remasked = []
            if len(drafts) > 1:
                remasked = [i for i in decided if back[i] < threshold_back]
                if len(remasked) >= last_accept:
                    remasked = _best(back, last_accept - 1, largest=False)
            for i in drafts:
                canvas[P + i] = int(probs[i].argmax())
            for i in remasked:
                canvas[P + i] = mask
            last_accept = len(drafts)
            out.append(_record(canvas, P, drafts, remasked))
    return out


def joint_threshold_reference(model, prompt, *, gen_length, block_length, threshold, edit_threshold,
                              max_post_edit_steps, penalty_lambda=0.0):
    """LLaDA 2.1's decoding as SGLang 0.5.23 ships it (joint_threshold.py, `JointThreshold._step_per_row`).

    Per block: argmax x and p = softmax(logits)[x] at every position of the block (after subtracting
    penalty_lambda from each position's logit of the previous position's token, within the block);
    mask to token: masks with p > threshold, else the most probable one; token to token: decided
    tokens with x != token and p > edit_threshold. With no mask left, each step counts one edit-only
    step; the block ends at the step that exceeds max_post_edit_steps or changes nothing.
    """
    mask, P, G = model.mask_token_id, len(prompt), gen_length
    canvas = list(prompt) + [mask] * G
    out = []
    for b in range(G // block_length):
        lo, hi = b * block_length, (b + 1) * block_length
        post = 0
        while True:
            logits = _logits(model, canvas)[P:]
            if penalty_lambda > 0:
                for i in range(lo + 1, hi):
                    logits[i, canvas[P + i - 1]] -= penalty_lambda
            probs = torch.softmax(logits, -1)
            x = logits.argmax(-1)
            p = {i: float(probs[i, x[i]]) for i in range(lo, hi)}
            masked = [i for i in range(lo, hi) if canvas[P + i] == mask]
            confirmed = []
            if masked:
                confirmed = [i for i in masked if p[i] > threshold] or _best({i: p[i] for i in masked}, 1)
            else:
                post += 1
                if post > max_post_edit_steps:
                    out.append(_record(canvas, P, []))
                    break
            edited = [i for i in range(lo, hi) if canvas[P + i] != mask and int(x[i]) != canvas[P + i]
                      and p[i] > edit_threshold]
            for i in confirmed + edited:
                canvas[P + i] = int(x[i])
            out.append(_record(canvas, P, confirmed, (), edited))
            if not confirmed and not edited:
                break
    return out


def replay(trace) -> list[dict]:
    """The same per-step record from a dllm-viz trace."""
    return [{"canvas": [t if t is not None else trace.mask_token_id for t in trace.canvas_at(rec.step)],
             "confirmed": sorted(rec.selected), "remasked": sorted(rec.remasked or []),
             "edited": sorted(rec.edited or [])} for rec in trace.steps]


def first_difference(mine: list[dict], ref: list[dict]) -> str | None:
    """Where two per-step records part, for the assertion message."""
    for i, (a, b) in enumerate(zip(mine, ref)):
        if a != b:
            return f"step {i}: decode {a} != reference {b}"
    if len(mine) != len(ref):
        return f"decode took {len(mine)} steps, the reference {len(ref)}"
    return None


