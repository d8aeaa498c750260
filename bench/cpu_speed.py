"""The embedded model's CPU paths side by side: fp32, the full output head, bf16 weights, bf16 autocast,
torch.compile, int8.

    OMP_NUM_THREADS=1 python bench/cpu_speed.py --threads 1 --rounds 9

One run, one thread, rounds interleaved (every variant once per round, in turn) so that a busy
machine slows all variants alike; medians are reported. Work timed per variant: a balanced decode
and a quality decode of a 10-token prompt + 64 tokens (batch 1), the playground's re-decode.
``--variants fp32 int8-dynamic`` adds dynamic int8 quantization of the linear layers (weights
int8, activations quantized per call). ``fp32-full-head`` is the shipped model without
``logits_at``: the decoder then runs the output head (D x V, a third of a forward at 12288 pieces)
at every position and keeps the masked ones, as it did before ``logits_at``.

Agreement with fp32 (what the playground would show):
- greedy decodes (temperature 0, balanced and quality schedules, the 8 prompts of
  ``bench/model_quality.py``): how many give other tokens than fp32;
- per forward, on masked canvases made from those outputs: how often the argmax token differs
  and, where it does, how far apart fp32's two best logits were, in units of the bf16 spacing at
  that logit (a gap of <= 1 unit is a tie that bf16 cannot resolve).

``--shapes 256x6 384x8 ...`` times fp32 decodes of untrained models of other widths x depths
(same vocabulary and tokenizer; a decode's number of forwards does not depend on the weights)
beside the shipped one, to choose the next model's size against the playground's budget.

Attention: the embedded model already calls ``F.scaled_dot_product_attention`` (the fused
kernel), so "fused attention" is the baseline, not a variant.
"""
from __future__ import annotations

import argparse
import copy
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_quality import PROMPTS  # noqa: E402

from dllm_viz import DecodeConfig, decode  # noqa: E402
from dllm_viz.models.base import logits_at  # noqa: E402
from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser, load_embedded  # noqa: E402

PROMPT = "It was a cold morning in November, and the whole family was gathered in the"


class Variant:
    """A denoiser that runs ``forward`` (maybe compiled) under an optional bf16 autocast.

    With ``masked_head`` (the shipped path) it also offers the model's ``logits_at``, so the decoder
    runs the output head at the masked positions only; without it the decoder takes the full
    ``(B, N, V)`` forward and gathers them (the path before ``logits_at``).
    """

    def __init__(self, model: EmbeddedDenoiser, *, autocast: bool = False, compile: bool = False,
                 masked_head: bool = True) -> None:
        self.model = model
        self.autocast = autocast
        # dynamic=None: static first, then one dynamic recompile when the batch shape changes
        self.forward = torch.compile(model) if compile else model
        if masked_head:
            at = torch.compile(model.logits_at) if compile else model.logits_at
            self.logits_at = lambda *args: self._autocast(at, *args)

    def __getattr__(self, name: str):  # mask_token_id, tokenizer, max_length, device, ...
        if name == "logits_at":  # only through __init__: a variant without it takes the full forward
            raise AttributeError(name)
        return getattr(self.model, name)

    def _autocast(self, fn: Callable, *args) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.autocast):
            return fn(*args)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self._autocast(self.forward, input_ids, attention_mask)


def variants(model: EmbeddedDenoiser, names: list[str]) -> dict[str, Variant]:
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    table: dict[str, Callable[[], Variant]] = {
        "int8-dynamic": lambda: Variant(int8_dynamic(model)),
        "fp32": lambda: Variant(model),
        "fp32-full-head": lambda: Variant(model, masked_head=False),
        "bf16-weights": lambda: Variant(bf16),
        "fp32+autocast-bf16": lambda: Variant(model, autocast=True),
        "fp32+compile": lambda: Variant(model, compile=True),
        "bf16-weights+compile": lambda: Variant(bf16, compile=True),
    }
    return {name: table[name]() for name in names}


def int8_dynamic(model: EmbeddedDenoiser) -> EmbeddedDenoiser:
    """A copy whose ``nn.Linear`` layers (attention, MLP) run int8 weights with activations quantized
    per call (``torch.ao`` dynamic quantization, fbgemm on x86). The tied output head (``F.linear``
    with the embedding) and the convolutions stay fp32."""
    import warnings

    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao (not a dependency)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)


def shaped(model: EmbeddedDenoiser, shape: str) -> EmbeddedDenoiser:
    """An untrained model ``WIDTHxDEPTH`` (head size 64, SwiGLU width ~8/3 d) with ``model``'s vocabulary."""
    d, n = (int(v) for v in shape.split("x"))
    cfg = EmbeddedConfig(vocab_size=model.vocab_size, mask_token_id=model.mask_token_id,
                         pad_token_id=model.pad_token_id, eos_token_id=model.eos_token_id, d_model=d, n_layers=n,
                         n_heads=max(1, d // 64), d_ff=64 * round(8 * d / 3 / 64), max_length=model.max_length)
    return EmbeddedDenoiser(cfg, model.tokenizer,
                            generator=torch.Generator().manual_seed(0)).eval().requires_grad_(False)


def time_shapes(model: EmbeddedDenoiser, shapes: list[str], ids: list[int], rounds: int) -> None:
    models = {"shipped": model, **{s: shaped(model, s) for s in shapes}}
    configs = {p: DecodeConfig.preset(p, 64, seed=0) for p in ("balanced", "quality")}
    def run(m, preset: str) -> None:
        with torch.inference_mode():
            decode(m, [ids], configs[preset], record_candidates=5)
    for m in models.values():
        run(m, "balanced")
    times = {n: {"balanced": [], "quality": []} for n in models}
    for _ in range(rounds):
        for name, m in models.items():
            for preset in ("balanced", "quality"):
                times[name][preset].append(timed(lambda: run(m, preset)))
    base = {p: statistics.median(times["shipped"][p]) for p in ("balanced", "quality")}
    print(f"\n{'shape':10} {'params M':>8} {'balanced ms':>11} {'x shipped':>9} {'quality ms':>10} {'x shipped':>9}")
    for name, m in models.items():
        med = {p: statistics.median(times[name][p]) for p in base}
        print(f"{name:10} {m.num_parameters() / 1e6:8.1f} {1000 * med['balanced']:11.0f} "
              f"{med['balanced'] / base['balanced']:9.2f} {1000 * med['quality']:10.0f} "
              f"{med['quality'] / base['quality']:9.2f}")
    print(f"{rounds} interleaved rounds, medians, fp32")


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def greedy(model, prompts: list[str], preset: str) -> list[list[int]]:
    configs = DecodeConfig.preset(preset, 64, temperature=0.0)
    with torch.inference_mode():
        traces = decode(model, prompts, configs, record_candidates=0)
    return [list(t.token_ids) for t in traces]


def bf16_spacing(x: torch.Tensor) -> torch.Tensor:
    """Distance between neighbouring bf16 numbers at ``x`` (8 significant bits)."""
    return torch.exp2(torch.floor(torch.log2(x.abs().clamp(min=1e-30))) - 7)


def forward_agreement(ref: EmbeddedDenoiser, other, canvases: torch.Tensor, mask_id: int, seed: int = 0) -> dict:
    """Argmax agreement at masked positions of ``canvases (B, N)`` masked at ratios 0.2..1.0."""
    gen = torch.Generator().manual_seed(seed)
    B, N = canvases.shape
    ratio = torch.linspace(0.2, 1.0, B)[:, None]
    masked = torch.rand(B, N, generator=gen) < ratio
    masked[:, :10] = False  # the prompt stays visible
    x = torch.where(masked, torch.full_like(canvases, mask_id), canvases)
    rows, cols = masked.nonzero(as_tuple=True)
    with torch.inference_mode():  # each through its own path, as the decoder calls it
        a = logits_at(ref, x, None, rows, cols).float()  # (M, V)
        b = logits_at(other, x, None, rows, cols).float()
    top2 = a.topk(2, dim=-1).values  # (M, 2)
    differ = a.argmax(-1) != b.argmax(-1)
    gap_units = (top2[:, 0] - top2[:, 1]) / bf16_spacing(top2[:, 0])
    d = gap_units[differ]
    # The schedule's choice: the k most confident masked positions of each row (k = 16, balanced's
    # first step), by raw max-probability. A different set changes the canvas even if every argmax agrees.
    conf_a = torch.full((B, N), -1.0)
    conf_b = torch.full((B, N), -1.0)
    conf_a[masked] = a.softmax(-1).max(-1).values
    conf_b[masked] = b.softmax(-1).max(-1).values
    k = 16
    sets_differ, tie_units = 0, []
    for row in range(B):
        sa, sb = conf_a[row].topk(k).indices, conf_b[row].topk(k).indices
        if set(sa.tolist()) != set(sb.tolist()):
            sets_differ += 1
            kth, next_ = conf_a[row].topk(k + 1).values[-2:]
            tie_units.append(float((kth - next_) / bf16_spacing(kth)))
    return {"positions": int(masked.sum()), "argmax_differ": int(differ.sum()),
            "within_1_unit": int((d <= 1).sum()), "within_4_units": int((d <= 4).sum()),
            "max_gap_units": float(d.max()) if d.numel() else 0.0,
            "rows": B, "choice_differ": sets_differ,
            "choice_gap_units": max(tie_units) if tie_units else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--path", default=None, help="model folder (default: dllm_viz/assets/embedded)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--variants", nargs="+",
                        default=["fp32", "fp32-full-head", "bf16-weights", "fp32+autocast-bf16",
                                 "fp32+compile", "bf16-weights+compile"])
    parser.add_argument("--shapes", nargs="*", default=None, help="time untrained WIDTHxDEPTH models instead")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_embedded(device="cpu", path=args.path)
    ids = model.tokenizer.encode(PROMPT)[:10]  # a 10-token prompt
    if len(ids) != 10:
        raise ValueError(f"prompt: expected at least 10 tokens, got {len(ids)}")
    if args.shapes:
        print(f"{model.name}: {args.threads} thread(s), cpu capability {torch.backends.cpu.get_cpu_capability()}; "
              f"prompt 10 tokens + 64")
        time_shapes(model, args.shapes, ids, args.rounds)
        return
    runs = variants(model, args.variants)
    configs = {p: DecodeConfig.preset(p, 64, seed=0) for p in ("balanced", "quality")}

    def run(v: Variant, preset: str) -> None:
        with torch.inference_mode():
            decode(v, [ids], configs[preset], record_candidates=5)

    print(f"{model.name}: {model.num_parameters() / 1e6:.2f}M parameters, {args.threads} thread(s), "
          f"cpu capability {torch.backends.cpu.get_cpu_capability()}; prompt 10 tokens + 64")
    warm = {}
    for name, v in runs.items():  # first call: compilation (or kernel set-up) is paid here, reported apart
        warm[name] = timed(lambda: run(v, "balanced")) + timed(lambda: run(v, "quality"))
    times: dict[str, dict[str, list[float]]] = {n: {"balanced": [], "quality": []} for n in runs}
    for _ in range(args.rounds):
        for name, v in runs.items():
            for preset in ("balanced", "quality"):
                times[name][preset].append(timed(lambda: run(v, preset)))
    base = {p: statistics.median(times["fp32"][p]) for p in ("balanced", "quality")} if "fp32" in runs else None

    prompts = list(PROMPTS)
    ref_tokens = {p: greedy(runs["fp32"], prompts, p) for p in ("balanced", "quality")}
    rows = [model.tokenizer.encode(pr)[:10] + t[:64] for p in ("balanced", "quality")
            for pr, t in zip(prompts, ref_tokens[p]) if len(t) >= 64 and len(model.tokenizer.encode(pr)) >= 10]
    canvases = torch.tensor(rows * 3)  # each masked three times, at different ratios
    print(f"\n{'variant':22} {'balanced ms':>11} {'x fp32':>7} {'quality ms':>10} {'x fp32':>7} {'first calls s':>13} "
          f"{'greedy outputs != fp32':>22} {'argmax != fp32 (ties <=1 / <=4 units)':>38} {'top-16 choice != fp32':>22}")
    for name, v in runs.items():
        med = {p: statistics.median(times[name][p]) for p in ("balanced", "quality")}
        ratio = {p: (med[p] / base[p] if base else math.nan) for p in med}
        differ = 0
        for p in ("balanced", "quality"):
            differ += sum(a != b for a, b in zip(ref_tokens[p], greedy(v, prompts, p)))
        agree = forward_agreement(runs["fp32"], v, canvases, model.mask_token_id)
        print(f"{name:22} {1000 * med['balanced']:11.0f} {ratio['balanced']:7.2f} {1000 * med['quality']:10.0f} "
              f"{ratio['quality']:7.2f} {warm[name]:13.1f} {f'{differ}/{2 * len(prompts)}':>22} "
              f"{agree['argmax_differ']:>8}/{agree['positions']} "
              f"({agree['within_1_unit']} / {agree['within_4_units']}; "
              f"max gap {agree['max_gap_units']:.0f}) "
              f"{agree['choice_differ']:>6}/{agree['rows']} "
              f"(largest fp32 k-th gap {agree['choice_gap_units']:.1f} units)")
    spread = {n: (min(times[n]['balanced']), max(times[n]['balanced'])) for n in runs}
    print(f"\n{args.rounds} interleaved rounds, medians; balanced min-max per variant (ms): "
          + ", ".join(f"{n} {1000 * lo:.0f}-{1000 * hi:.0f}" for n, (lo, hi) in spread.items()))


if __name__ == "__main__":
    main()
