"""How the embedded model's batch-invariant path costs against the alternatives, side by side in one run.

For one decode step of 16 requests (canvases of 72-96 positions, 32 still masked each) and for one
request alone (84 positions, 64 down to 2 masked), the CPU time of the model's logits under:

  rows alone     each canvas row through the network alone, the head per row (the path before
                 issue 30: exact, but batching does not share any product);
  padded batch   one right-padded forward for all rows, the head over all masked positions (the
                 path before that: fast, not exact: a row's last bits depend on its neighbours);
  tiles T        `EmbeddedDenoiser.logits_at`: rows packed, every product in tiles of T rows
                 (`dllm_viz.models.tiles`), attention and mixing per row (exact);

and whether each gives a row the same bits as the row alone. `bench/engine_bench.py` measures what
the engine makes of it.

    python bench/tile_bench.py                  # tiles 16, 32, 64, 128, one thread
    python bench/tile_bench.py --tiles 32 64
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz.models import tiles  # noqa: E402
from dllm_viz.models.base import NEVER_LOGIT  # noqa: E402
from dllm_viz.models.embedded import load_embedded  # noqa: E402


def rows_alone(model: Any, ids: torch.Tensor, lengths: list[int], rows: torch.Tensor,
               cols: torch.Tensor) -> torch.Tensor:
    out = model.embed.weight.new_empty(rows.numel(), model.vocab_size)
    for r, n in enumerate(lengths):
        at = rows == r
        h = model.features(ids[r : r + 1, :n])[0, cols[at]]
        out[at] = model.head(h)
    return out.index_fill_(-1, model.special_ids, NEVER_LOGIT)


def padded_batch(model: Any, ids: torch.Tensor, lengths: list[int], rows: torch.Tensor,
                 cols: torch.Tensor) -> torch.Tensor:
    mask = torch.arange(ids.shape[1]) < torch.tensor(lengths).unsqueeze(1)
    return model.head(model.features(ids, mask)[rows, cols]).index_fill_(-1, model.special_ids, NEVER_LOGIT)


def tiled(tile: int) -> Callable[..., torch.Tensor]:
    def run(model: Any, ids: torch.Tensor, lengths: list[int], rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        tiles.ROW_TILE = tile
        mask = torch.arange(ids.shape[1]) < torch.tensor(lengths).unsqueeze(1)
        return model.logits_at(ids, mask, rows, cols)
    return run


def cpu_ms(fn: Callable[[], Any], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiles", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--reps", type=int, default=5, help="best of this many runs per figure")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = load_embedded(device="cpu")
    g = torch.Generator().manual_seed(0)
    lengths = [72 + (3 * i) % 25 for i in range(16)]
    ids = torch.randint(16, model.vocab_size, (16, max(lengths)), generator=g)
    rows = torch.arange(16).repeat_interleave(32)
    cols = torch.cat([torch.arange(n - 32, n) for n in lengths])
    variants = {"rows alone": rows_alone, "padded batch": padded_batch,
                **{f"tiles {t}": tiled(t) for t in args.tiles}}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); CPU ms, best of {args.reps}")
    print(f"{'':14}{'16 requests':>13}{'1 request, masks 64..2':>25}{'a row = the row alone':>24}")
    default = tiles.ROW_TILE
    with torch.inference_mode():
        for name, fn in variants.items():
            batch = cpu_ms(lambda: fn(model, ids, lengths, rows, cols), args.reps)
            one = 0.0
            for m in (64, 48, 32, 16, 8, 4, 2):
                r, c = torch.zeros(m, dtype=torch.long), torch.arange(84 - m, 84)
                one += cpu_ms(lambda: fn(model, ids[:1, :84], [84], r, c), args.reps)
            together = fn(model, ids, lengths, rows, cols)
            same = all(torch.equal(together[rows == i], fn(model, ids[i : i + 1, :n], [n], rows[rows == i] * 0,
                                                          cols[rows == i])) for i, n in enumerate(lengths))
            print(f"{name:14}{batch:11.1f} ms{one:21.1f} ms (sum){'yes' if same else 'no':>20}")
    tiles.ROW_TILE = default


if __name__ == "__main__":
    main()
