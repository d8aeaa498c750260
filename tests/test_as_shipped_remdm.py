"""The `remdm` preset against ReMDM's own sampler (issue 40): kuleshov-group/remdm, diffusion.py.

`tests/remdm/diffusion.py` is ReMDM's code (Apache-2.0, see its NOTICE): `Diffusion._sample` and
`_ddpm_caching_update` run here unmodified, through `RemdmRun`, a thin adapter that gives them the
attributes they read (the configuration scripts/remdm-*.sh set, a backbone that returns a
dllm-viz model's logits) and records every step. The original's randomness is one float64 uniform
per position and vocabulary entry per step (`_sample_categorical`: `torch.rand_like` on the global
generator, exponential races over q_xs); the adapter seeds that generator inside `fork_rng`, so a
seed is a replayable stream of coins.

The preset (`revise="remdm_shipped"`, docs/as_shipped.md), with the same seed, draws the same coins from
the request's generator (`torch.rand((L, V), dtype=float64)` per step, in row chunks, nothing else) and
gives the same canvas after every step, the noise-removal forward its last step, and counts the
original's forwards (none at a step whose input equals the step before's output: ReMDM reuses p_x0
there). Where a coin is not replayed, the per-step counts follow the original's distribution. Our
count-based rule stays as the `remdm_counted` preset.
"""
from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from tests.as_shipped import NoMaskTiny, TableModel, canvases, first_difference
from tests.remdm import diffusion as remdm

remdm.tqdm = lambda steps: steps  # the original's progress bar, silenced (the module's own name for it)

NUCLEUS = 0.9  # every scripts/remdm-*.sh: sampling.nucleus_p=0.9, T=0, time_conditioning=false
# scripts/remdm-<name>.sh: the sampler's knobs, and the same rule as overrides of dllm-viz's `remdm` preset.
SCRIPTS = {
    "remdm-loop": (dict(eta=0.02, t_on=0.55, t_off=0.05, alpha_on=0.9), {}),
    "remdm-cap": (dict(eta=0.008), {"remask_sigma": "cap", "remask_eta": 0.008}),
    "remdm-rescale": (dict(eta=0.015), {"remask_sigma": "rescale", "remask_eta": 0.015}),
    "remdm-conf": (dict(conf_dtype=torch.float32), {"remask_sigma": "conf"}),
}
# remdm-conf as published keeps its confidences in bfloat16 (`confident_score` in `_sample`) and writes
# float32 values into them (`conf[unmask_mask] = conf_values[unmask_mask]`), which torch refuses for two or more
# (test_remdm_conf_as_published_cannot_run). `conf_dtype=torch.float32` is the one change the adapter
# makes to run it: it hands `_ddpm_caching_update` the confidences in float32 (the dtype of the values
# written into them), the nearest runnable reading, and docs/as_shipped.md names it as such.


class RemdmRun:
    """ReMDM's `Diffusion._sample` (predictor ddpm_cache, loglinear noise, subs parameterization) on a
    dllm-viz model, unconditional as the original samples: every position starts masked.

    `run(seed)` returns the final ids `(batch, length)`; afterwards `steps` holds, per step, its time t,
    the canvas after it `(batch, length)` and whether it ran a forward (False: p_x0 reused), and
    `forwards` counts the backbone's calls (the noise-removal forward included)."""

    def __init__(self, model, *, length: int, sampler: str, steps: int, eta: float = 0.0, t_on: float = 0.0,
                 t_off: float = 0.0, alpha_on: float = 0.0, nucleus_p: float = NUCLEUS, batch: int = 1,
                 conf_dtype: torch.dtype | None = None) -> None:
        self.model, self.conf_dtype = model, conf_dtype
        sampling = SimpleNamespace(predictor="ddpm_cache", steps=steps, noise_removal=True, nucleus_p=nucleus_p,
                                   eta=eta, sampler=sampler, t_on=t_on, t_off=t_off, alpha_on=alpha_on, dfm=False)
        d = remdm.Diffusion()
        d.config = SimpleNamespace(sampling=sampling, noise=SimpleNamespace(type="loglinear"),
                                   loader=SimpleNamespace(eval_batch_size=batch), model=SimpleNamespace(length=length))
        d.backbone = self._backbone
        # noise_schedule.LogLinearNoise(eps=1e-3)'s total noise: the time conditioning, which
        # time_conditioning=false zeroes before the backbone sees it (`_process_sigma`).
        d.noise = lambda t: (-torch.log1p(-(1 - 1e-3) * t), None)
        d.mask_index, d.parameterization, d.time_conditioning = model.mask_token_id, "subs", False
        d.sampler, d.neg_infinity, d.device = "ddpm_cache", -1000000.0, torch.device("cpu")
        update = d._ddpm_caching_update

        def recorded(x, t, dt, p_x0=None, conf=None):
            if self.conf_dtype is not None:
                conf = conf.to(self.conf_dtype)
            out = update(x, t, dt, p_x0=p_x0, conf=conf)
            self.steps.append({"t": float(t[0, 0]), "x": out[1].clone(), "forward": p_x0 is None})
            return out

        d._ddpm_caching_update = recorded  # the loop in `_sample` calls it through the instance
        self.diffusion, self.steps, self.forwards = d, [], 0

    def _backbone(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        self.forwards += 1
        return self.model(x).float()

    def run(self, seed: int) -> torch.Tensor:
        self.steps, self.forwards = [], 0
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.cuda.amp.autocast on a CPU build
            torch.manual_seed(seed)
            return self.diffusion._sample(num_steps=self.diffusion.config.sampling.steps, eps=1e-5)

    def canvases(self, row: int = 0) -> list[list[int]]:
        """The canvas after each step, then after the noise-removal forward."""
        return [s["x"][row].tolist() for s in self.steps]


def original(model, name: str, length: int, steps: int | None, seed: int):
    knobs = SCRIPTS[name][0]
    run = RemdmRun(model, length=length, sampler=name, steps=steps or length, **knobs)
    final = run.run(seed)
    return run, run.canvases() + [final[0].tolist()]


def ours(model, name: str, length: int, steps: int | None, seed: int):
    overrides = dict(SCRIPTS[name][1], **({} if steps is None else {"steps": steps}))
    (trace,) = decode(model, [[]], DecodeConfig.preset("remdm", length, seed=seed, **overrides))
    return trace


CASES = [(name, 32, None, seed) for name in SCRIPTS for seed in (0, 1, 2)] + \
    [("remdm-loop", 48, 24, seed) for seed in (0, 1)]


@pytest.fixture(scope="module")
def model():
    return NoMaskTiny(scale=3.0)


def check_step_by_step(model, name: str, length: int, steps: int | None, seed: int) -> None:
    _, theirs = original(model, name, length, steps, seed)
    trace = ours(model, name, length, steps, seed)
    mine = canvases(trace)
    assert mine == theirs, first_difference(mine, theirs, [model.mask_token_id] * length, model.mask_token_id)
    assert trace.token_ids == theirs[-1]


FAST = [CASES[0], CASES[4]]  # remdm-loop and remdm-cap; the rest in the slow tier (tests/conftest.py)


@pytest.mark.parametrize("name,length,steps,seed", FAST)
def test_remdm_preset_is_remdm_step_by_step_with_replayed_coins(model, name, length, steps, seed):
    check_step_by_step(model, name, length, steps, seed)


@pytest.mark.parametrize("name,length,steps,seed", [c for c in CASES if c not in FAST])
def test_remdm_preset_is_remdm_step_by_step_over_the_grid(model, name, length, steps, seed):
    check_step_by_step(model, name, length, steps, seed)


@pytest.mark.parametrize("name,length,steps,seed", [CASES[0], CASES[-1]])
def test_remdm_preset_counts_remdm_s_forwards(model, name, length, steps, seed):
    run, _ = original(model, name, length, steps, seed)
    assert ours(model, name, length, steps, seed).nfe == run.forwards


# ----- the original, measured: what the docs say it does -----------------------------------------
def test_the_adapter_replays_the_coins_and_they_matter(model):
    run = RemdmRun(model, length=32, sampler="remdm-loop", steps=32, **SCRIPTS["remdm-loop"][0])
    a, b, c = run.run(3), run.run(3), run.run(4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert model.mask_token_id not in a[0].tolist()  # the noise-removal forward filled what was left


def test_remdm_conf_as_published_cannot_run(model):
    """`conf[unmask_mask] = conf_values[unmask_mask]` writes float32 into bfloat16: torch casts a single
    element, and refuses two or more; so the run stops at the first step that unmasks two positions."""
    run = RemdmRun(model, length=16, sampler="remdm-conf", steps=16)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        run.run(0)
    entering = [torch.zeros(1, 16, dtype=torch.long)] + [s["x"] for s in run.steps]
    assert all(int(((a == 0) & (b != 0)).sum()) <= 1 for a, b in zip(entering, entering[1:]))


def test_remdm_reuses_p_x0_when_a_step_changes_nothing_and_removes_noise_with_one_more_forward(model):
    run = RemdmRun(model, length=32, sampler="remdm-loop", steps=32, **SCRIPTS["remdm-loop"][0])
    skipped = 0
    for seed in range(4):
        run.run(seed)
        entering = [torch.zeros_like(run.steps[0]["x"])] + [s["x"] for s in run.steps[:-1]]  # all masks (id 0) first
        for i, step in enumerate(run.steps):  # a forward unless the step before left its input unchanged
            assert step["forward"] == (i == 0 or not torch.equal(entering[i], entering[i - 1])), (seed, i)
        forwards = sum(s["forward"] for s in run.steps)
        assert run.forwards == forwards + 1  # ... plus the noise-removal forward
        skipped += len(run.steps) - forwards
    assert skipped > 0  # some steps of a 32-step run change nothing


N = 400  # rows of one batched run of the original, and requests of one batched decode
TABLE = torch.tensor([[0.0, 2.0, 1.0, 0.5, -0.5, 0.3, 1.2, -1.0],
                      [0.0, 0.2, 2.5, 0.1, 0.9, -0.3, 0.0, 0.4],
                      [0.0, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5]]).repeat(8, 1)  # (24, 8): id 0 is the mask


def batched_original(name: str, length: int = 24, steps: int = 24) -> tuple[RemdmRun, torch.Tensor]:
    """One run of the original over N rows (one batch: the same times, each row its own coins)."""
    run = RemdmRun(TableModel(TABLE), length=length, sampler=name, steps=steps, batch=N, **SCRIPTS[name][0])
    return run, run.run(0)


def test_remdm_loop_starts_by_time_and_flips_a_coin_per_position():
    """In the loop (t_off < t <= t_on) each decided token goes back with probability eta and each mask
    is unmasked with probability alpha_on * eta / (1 - alpha_on), whatever a row's visible share."""
    knobs = SCRIPTS["remdm-loop"][0]
    run, _ = batched_original("remdm-loop")
    back = decided = filled = masked = 0
    below = False  # some row entered the loop with fewer than alpha_on of its positions visible
    prev = None
    for s in run.steps:
        x = s["x"] != 0  # (N, L) visible
        if prev is not None and knobs["t_off"] < s["t"] <= knobs["t_on"]:
            if not below:
                below = bool((prev.float().mean(-1) < knobs["alpha_on"]).any() and (prev & ~x).any())
            back, decided = back + int((prev & ~x).sum()), decided + int(prev.sum())
            filled, masked = filled + int((~prev & x).sum()), masked + int((~prev).sum())
        prev = x
    eta, a = knobs["eta"], knobs["alpha_on"]
    for hits, n, p in ((back, decided, eta), (filled, masked, a * eta / (1 - a))):
        assert abs(hits / n - p) <= 5 * math.sqrt(p * (1 - p) / n), (hits, n, p)
    assert below


def _per_step(steps: list[torch.Tensor]) -> tuple[list[float], list[float]]:
    """Per step: mean masks per row, and their variance."""
    masks = [(x == 0).double().sum(-1) for x in steps]
    return [float(m.mean()) for m in masks], [float(m.var()) for m in masks]


def test_remdm_preset_follows_remdm_s_distribution_step_by_step():
    """Where coins are not replayed: the masks left after each step, over N runs, within 5 standard
    errors of the original's, and each position's final token frequencies within 5 sigma."""
    run, final_theirs = batched_original("remdm-loop")
    theirs = [s["x"] for s in run.steps]
    traces = decode(TableModel(TABLE), [[]] * N, [DecodeConfig.preset("remdm", 24, seed=s) for s in range(N)],
                    record_candidates=0)
    mine = [torch.tensor([c[i] for c in map(canvases, traces)]) for i in range(len(traces[0].steps))]
    assert len(mine) == len(theirs) + 1  # the noise-removal step last
    (m1, v1), (m2, v2) = _per_step(mine[:-1]), _per_step(theirs)
    for i, (a, b, va, vb) in enumerate(zip(m1, m2, v1, v2)):
        assert abs(a - b) <= 5 * math.sqrt((va + vb) / N) + 1e-9, (i, a, b)
    final_mine = torch.tensor([t.token_ids for t in traces])
    for j in range(TABLE.shape[0]):
        for v in range(1, TABLE.shape[1]):
            p = float((final_theirs[:, j] == v).double().mean())
            q = float((final_mine[:, j] == v).double().mean())
            assert abs(p - q) <= 5 * math.sqrt((p * (1 - p) + q * (1 - q)) / N) + 1e-9, (j, v, p, q)


def test_the_coins_drawn_in_row_chunks_are_the_original_s_one_draw():
    """ReMDM draws `rand_like` of (1, L, V) float64 on the global generator each step; the preset draws the same
    stream from the request's generator a few positions at a time (`core.canvas.Coins`), which bounds the
    memory of a step at LLaDA's vocabulary (1,024 x 126,464 float64 at once is 1 GB)."""
    from dllm_viz.core.canvas import Coins

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        whole = torch.rand_like(torch.zeros(1, 12, 126_464, dtype=torch.float64))[0]
    coins = Coins([torch.Generator().manual_seed(7)])
    assert torch.equal(torch.cat([coins.draw(0, n, 126_464) for n in (5, 1, 6)]), whole)


def test_the_preset_does_not_depend_on_the_coin_chunk(model, monkeypatch):
    from dllm_viz.core.rules import remdm_shipped

    whole = ours(model, "remdm-loop", 32, None, 1)
    monkeypatch.setattr(remdm_shipped, "COIN_FLOATS", 3 * 40)  # three positions of the tiny vocabulary at a time
    assert canvases(ours(model, "remdm-loop", 32, None, 1)) == canvases(whole)


def test_with_a_prompt_and_in_a_mixed_batch_each_request_gets_its_own_trace(model):
    """The prompt is not in the coins (ReMDM samples unconditionally): it stays as given; a request's trace is
    the one it gets alone, beside other rules and other lengths (its coins are its own generator's)."""
    from dllm_viz import Trace

    configs = [DecodeConfig.preset("remdm", 32, seed=4), DecodeConfig.preset("remdm_counted", 16, seed=4),
               DecodeConfig.preset("remdm", 24, seed=5, remask_sigma="conf"), DecodeConfig.preset("llada", 8)]
    prompts = [[5, 6, 7], [1, 2], [], [3]]
    together = decode(model, prompts, configs)
    for prompt, config, trace in zip(prompts, configs, together):
        (alone,) = decode(model, [prompt], config)
        assert canvases(trace) == canvases(alone) and trace.nfe == alone.nfe
        assert trace.prompt_ids == prompt and Trace.from_json(trace.to_json()).to_json() == trace.to_json()
    assert len(together[0].steps) == 33 and together[0].nfe < 33  # steps that change nothing run no forward
