"""How much does the decoding loop cost on top of the model? (issue 2's benchmark)

Measured side by side in one run, for B = 8 requests, gen_length = 128, 64 steps (fixed_steps):
  (a) decode wall time / (NFE x one forward pass of the same batch): the loop, the schedule and
      the trace should be nearly free next to the forwards (target <= 1.15);
  (b) one batched `decode` call for 16 requests vs the same 16 decoded one by one.
Rounds alternate the measured variants so that load on a shared machine hits them alike; each
figure is the median over rounds.

    python bench/decode_bench.py            # the embedded model when it loads, else --model random
    python bench/decode_bench.py --quick    # one round, smaller (b)
    python bench/decode_bench.py --model random --threads 1
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode  # noqa: E402


class RandomTransformer:
    """A random-initialised bidirectional transformer shaped like the embedded model.

    Pre-norm blocks of full self-attention and a SwiGLU MLP, learned positions, a tied output
    head; weights from an explicit generator. It stands in for the embedded model in timing runs:
    same widths, so the same cost per forward, but its predictions mean nothing.
    """

    def __init__(self, *, vocab: int = 4096, d_model: int = 256, n_layers: int = 6, n_heads: int = 4,
                 d_ff: int = 704, max_length: int = 256, seed: int = 0, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> None:
        g = torch.Generator().manual_seed(seed)

        def w(*shape: int, std: float = 0.02) -> torch.Tensor:
            return (torch.randn(*shape, generator=g) * std).to(device=device, dtype=dtype)

        self.mask_token_id, self.max_length, self.n_heads = vocab - 1, max_length, n_heads
        self.name = f"random-transformer-{n_layers}x{d_model}"
        self.device = torch.device(device)
        self.embed = w(vocab, d_model, std=1.0)  # (V, D); unit scale so the tied head gives O(1) logits
        self.pos = w(max_length, d_model)  # (N, D)
        out_std = 0.02 / math.sqrt(2 * n_layers)
        self.layers = [
            dict(qkv=w(3 * d_model, d_model), proj=w(d_model, d_model, std=out_std),
                 gate_up=w(2 * d_ff, d_model), down=w(d_model, d_ff, std=out_std))
            for _ in range(n_layers)
        ]

    def num_parameters(self) -> int:
        return self.embed.numel() + self.pos.numel() + sum(t.numel() for layer in self.layers for t in layer.values())

    @torch.inference_mode()
    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N = input_ids.shape
        H = self.n_heads
        x = self.embed[input_ids] + self.pos[:N]  # (B, N, D)
        mask = None if attention_mask is None else attention_mask[:, None, None, :]  # (B, 1, 1, N) keys
        for layer in self.layers:
            h = F.rms_norm(x, x.shape[-1:])
            q, k, v = F.linear(h, layer["qkv"]).view(B, N, 3, H, -1).permute(2, 0, 3, 1, 4)  # (B, H, N, Dh) each
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, N, Dh)
            x = x + F.linear(att.transpose(1, 2).reshape(B, N, -1), layer["proj"])
            gate, up = F.linear(F.rms_norm(x, x.shape[-1:]), layer["gate_up"]).chunk(2, dim=-1)  # (B, N, F)
            x = x + F.linear(F.silu(gate) * up, layer["down"])
        return F.linear(F.rms_norm(x, x.shape[-1:]), self.embed)  # (B, N, V), tied head


def load_bench_model(kind: str, *, device: str = "cpu", **random_kwargs: Any) -> Any:
    """`kind` "embedded", "random", or "auto" (the embedded model when it loads, else random)."""
    if kind in ("auto", "embedded"):
        try:
            from dllm_viz.models import load_model

            return load_model(device=device)
        except Exception as err:  # noqa: BLE001 - "auto" falls back, "embedded" reports
            if kind == "embedded":
                raise
            print(f"[embedded model unavailable ({type(err).__name__}: {err}); using the random transformer]")
    return RandomTransformer(device=device, **random_kwargs)


def make_prompts(model: Any, count: int, length: int, seed: int = 0) -> list[list[int]]:
    """Random prompts of `length` ordinary token ids (no special ids; seeded)."""
    g = torch.Generator().manual_seed(seed)
    special = {getattr(model, name, None) for name in ("mask_token_id", "pad_token_id", "eos_token_id")}
    vocab = getattr(model, "vocab_size", None) or int(model(torch.zeros(1, 1, dtype=torch.long)).shape[-1])
    out = []
    for _ in range(count):
        ids = torch.randint(16, vocab - 1, (length,), generator=g).tolist()
        out.append([i for i in ids if i not in special] + [16] * sum(i in special for i in ids))
    return out


class ForwardTimer:
    """Wraps a model and adds up the wall time spent in its forward calls."""

    def __init__(self, model: Any) -> None:
        self.model, self.seconds, self.calls = model, 0.0, 0
        for name in ("mask_token_id", "max_length", "name", "tokenizer", "device", "vocab_size"):
            if hasattr(model, name):
                setattr(self, name, getattr(model, name))

    def reset(self) -> None:
        self.seconds, self.calls = 0.0, 0

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        start = time.perf_counter()
        out = self.model(input_ids, attention_mask)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def describe(model: Any) -> str:
    params = model.num_parameters() if hasattr(model, "num_parameters") else "?"
    return f"{getattr(model, 'name', type(model).__name__)} ({params:,} parameters)" if params != "?" else str(model)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("auto", "embedded", "random"), default="auto")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating measurement rounds (median)")
    parser.add_argument("--prompt-length", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="one round; (b) with gen_length 64, 32 steps")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rounds = 1 if args.quick else args.rounds
    model = load_bench_model(args.model)
    print(f"model: {describe(model)}; torch {torch.__version__}, {torch.get_num_threads()} threads")

    # ----- (a) the loop's overhead over its forwards --------------------------------------------
    B, G, T, P = 8, 128, 64, args.prompt_length
    config = DecodeConfig(gen_length=G, schedule="fixed_steps", steps=T, temperature=1.0, seed=0)
    prompts = make_prompts(model, B, P)
    canvas = torch.full((B, P + G), model.mask_token_id, dtype=torch.long)  # (B, N): what step 0 sees
    canvas[:, :P] = torch.tensor(prompts)
    attention = torch.ones_like(canvas, dtype=torch.bool)  # (B, N)
    with torch.inference_mode():
        model(canvas, attention)  # warm-up
    decode(model, prompts[:2], config.replace(gen_length=16, steps=8))
    timer = ForwardTimer(model)
    rows: dict[str, list[float]] = {"decode": [], "decode, record_candidates=0": [], "NFE x forward": []}
    inside: list[float] = []  # share of decode's wall time spent inside the model's forward
    nfe = T
    for _ in range(rounds):
        timer.reset()
        t, traces = timed(lambda: decode(timer, prompts, config))
        rows["decode"].append(t)
        inside.append(timer.seconds / t)
        nfe = traces[0].nfe
        rows["decode, record_candidates=0"].append(timed(lambda: decode(model, prompts, config,
                                                                        record_candidates=0))[0])

        def forwards() -> None:
            with torch.inference_mode():
                for _ in range(nfe):
                    model(canvas, attention)

        rows["NFE x forward"].append(timed(forwards)[0])
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"\n(a) B={B}, prompt {P}, gen_length={G}, fixed_steps {T} steps -> NFE {nfe}; median of {rounds} round(s)")
    print(f"{'':34}{'seconds':>10}{'ms/step':>10}{'/ forwards':>12}")
    for name, value in med.items():
        print(f"{name:34}{value:10.3f}{1000 * value / nfe:10.2f}{value / med['NFE x forward']:12.3f}")
    per_round = [d / f for d, f in zip(rows["decode"], rows["NFE x forward"])]
    ratio_a = statistics.median(per_round)
    each = ", ".join(f"{r:.3f}" for r in per_round)
    print(f"ratio (a) decode / (NFE x forward) = {ratio_a:.3f} (per round: {each}); "
          f"target <= 1.15: {'met' if ratio_a <= 1.15 else 'NOT met'}")
    split = 1 / statistics.median(inside)
    print(f"same, from inside decode (wall time / time in the model's forwards, immune to load drift "
          f"between the two measurements) = {split:.3f}")

    # ----- (b) one batched call for 16 requests vs 16 calls ---------------------------------
    n = 16
    config_b = config if not args.quick else config.replace(gen_length=64, steps=32)
    prompts_b = make_prompts(model, n, P, seed=1)
    batched, serial = [], []
    for _ in range(rounds):
        batched.append(timed(lambda: decode(model, prompts_b, config_b))[0])
        serial.append(timed(lambda: [decode(model, [p], config_b) for p in prompts_b])[0])
    tb, ts = statistics.median(batched), statistics.median(serial)
    print(f"\n(b) {n} requests, gen_length={config_b.gen_length}, {config_b.steps} steps; median of {rounds} round(s)")
    print(f"one batched decode call   {tb:8.3f} s")
    print(f"16 calls one by one       {ts:8.3f} s")
    print(f"ratio (b) one-by-one / batched = {ts / tb:.2f}x")


if __name__ == "__main__":
    main()
