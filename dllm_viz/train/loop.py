"""The training loop (`fit`): a run folder, its model and optimiser, then per step a batch (`data`),
its corruption and loss (the recipe's objective, `objectives`), one AdamW step; evaluation and
checkpoints at their intervals. Everything random is drawn from one generator seeded by the
recipe and saved in every checkpoint, so a resumed run continues exactly where it stopped.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from tqdm import tqdm

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.train.checkpoint import save_checkpoint
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.data import load_data
from dllm_viz.train.evaluation import evaluate
from dllm_viz.train.model import build_model, init_tokenizer, start_from
from dllm_viz.train.objectives import Net, Objective, objective_for
from dllm_viz.train.optim import lr_at, make_optimizer
from dllm_viz.train.pairs import Rows
from dllm_viz.train.precision import cpu_has_bf16_units

log = logging.getLogger(__name__)


@dataclass
class RunState:
    """What a checkpoint holds and a resumed run restores: the model, the optimiser, the generator
    every random draw comes from, and how far the run got."""

    model: EmbeddedDenoiser
    opt: torch.optim.Optimizer
    gen: torch.Generator
    step: int = 0
    elapsed: float = 0.0  # seconds trained before this process (a resumed run's earlier time)

    def save(self, run: Path, cfg: TrainConfig, elapsed: float, keep_snapshot: bool) -> None:
        """``run/ckpt.pt`` (everything, to resume) and, with ``keep_snapshot``, the weights alone as
        ``run/snapshots/step-NNNNNN.pt``."""
        save_checkpoint(run / "ckpt.pt", model=self.model.state_dict(), optim=self.opt.state_dict(), step=self.step,
                        generator=self.gen.get_state(), elapsed=elapsed, train_config=asdict(cfg))
        if keep_snapshot:
            (run / "snapshots").mkdir(exist_ok=True)
            snapshot = run / "snapshots" / f"step-{self.step:06d}.pt"
            save_checkpoint(snapshot, model=self.model.state_dict(), step=self.step)


def fit(cfg: TrainConfig, *, data: Path, run: Path, resume: bool = False, init_from: Path | None = None,
        threads: int | None = None, device: str = "cpu", time_limit_min: float | None = None,
        progress: bool = True, compile: bool | str = False, keep_snapshots: bool = False) -> dict[str, float]:
    """Train into ``run/`` (tokenizer.json, tokens.pt, ckpt.pt, log.jsonl). Returns the last eval.

    ``init_from``: a checkpoint of an earlier run (or an exported model folder) whose weights (only)
    start this one, for a second phase with its own optimiser and schedule; its tokenizer is reused.
    A larger ``vocab_size`` grows the embedding (``grow_embedding``), a larger ``n_layers`` adds
    identity blocks (``grow_depth``): either way the second phase starts from the old model's function.
    ``compile``: ``torch.compile`` the model body for the training steps (True: inductor; a string
    names another backend, e.g. "eager" in tests). Window lengths vary (``short_fraction``), so it
    is compiled with dynamic shapes; checkpoints and evaluation use the plain module.
    ``keep_snapshots``: at every checkpoint also keep the weights alone as
    ``run/snapshots/step-NNNNNN.pt``, for ``average_checkpoints``.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    if cfg.bf16 and torch.device(device).type == "cpu" and not cpu_has_bf16_units():
        log.warning("bf16=True on a CPU without AMX or AVX512-BF16: slower than fp32 here; "
                    "pass --bf16 false for a CPU run")
    run.mkdir(parents=True, exist_ok=True)
    cfg, state, (train, heldout, cpt) = open_run(cfg, data=data, run=run, resume=resume, init_from=init_from,
                                                 device=torch.device(device))
    (run / "train_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    model, dev = state.model, torch.device(device)
    features = model.features
    if compile:
        features = torch.compile(model.features, dynamic=True, backend="inductor" if compile is True else compile)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # fp32 leftovers (norms, loss) on tensor cores
    objective = objective_for(cfg).for_run(cfg, model=model, train=train)
    net, draw = Net(model, features, cfg.bf16, dev), objective.sampler(cfg, train)
    model.train()
    size = (lambda d: f"{len(d)} pairs") if cfg.pairs else (lambda d: f"{d.numel()} tokens")
    log.info("model: %.2fM parameters; train %s, held-out %s (%.2f chars/token); starting at step %d",
             model.num_parameters() / 1e6, size(train), size(heldout), cpt, state.step)
    last_eval: dict[str, float] = {}
    t0 = time.time() - state.elapsed
    bar = tqdm(total=cfg.steps, initial=state.step, disable=not progress, mininterval=10, dynamic_ncols=True)
    while state.step < cfg.steps:
        loss = train_step(objective, net, state.opt, objective.corrupt(draw(state.gen), state.gen),
                          lr=lr_at(state.step, cfg), grad_clip=cfg.grad_clip)
        state.step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        done = state.step == cfg.steps or (time_limit_min is not None and time.time() - t0 > 60 * time_limit_min)
        if state.step % cfg.eval_every == 0 or done:
            last_eval = evaluate(model, heldout, cpt, cfg)
            record = {"step": state.step, "elapsed_s": round(time.time() - t0, 1), "train_loss": loss.item(),
                      **last_eval}
            with (run / "log.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")
            log.info("%s", json.dumps(record))  # also in log.jsonl
        if state.step % cfg.ckpt_every == 0 or done:
            state.save(run, cfg, time.time() - t0, keep_snapshots)
        if done:
            break
    bar.close()
    return last_eval


def open_run(
    cfg: TrainConfig, *, data: Path, run: Path, resume: bool, init_from: Path | None, device: torch.device
) -> tuple[TrainConfig, RunState, tuple[torch.Tensor | Rows, torch.Tensor | Rows, float]]:
    """The recipe to train (a resumed run's own, with the caller's step budget), the run's state (fresh,
    resumed from ``run/ckpt.pt``, or started from ``init_from``'s weights) and its data: ``(train,
    heldout, chars_per_token)`` (`data.load_data`)."""
    ckpt_path = run / "ckpt.pt"
    tokens = objective_for(cfg).tokens
    if tokens and init_from is None:
        raise ValueError(f"init_from=None is invalid for the {objective_for(cfg).name!r} objective: it adds "
                         f"{list(tokens)} to a start model's vocabulary; expected --init-from")
    old_tokenizer = init_tokenizer(init_from, run, cfg.vocab_size, tokens) if init_from is not None else None
    tokenizer, train, heldout, cpt = load_data(cfg, data, run)
    saved = torch.load(ckpt_path, weights_only=False) if resume and ckpt_path.is_file() else None
    if saved is not None:
        # The saved recipe wins, except the step budget: resuming with a larger --steps extends a run.
        cfg = replace(TrainConfig(**saved["train_config"]), steps=cfg.steps)
    model = build_model(cfg, tokenizer).to(device)
    state = RunState(model, make_optimizer(model, cfg), torch.Generator().manual_seed(cfg.seed))
    if saved is not None:
        model.load_state_dict(saved["model"])
        state.opt.load_state_dict(saved["optim"])
        state.gen.set_state(saved["generator"])
        state.step, state.elapsed = saved["step"], saved["elapsed"]
    elif init_from is not None:
        start_from(model, init_from, old_tokenizer, tokenizer, run, fresh=tokens, seed=cfg.seed)
    return cfg, state, (train, heldout, cpt)


def train_step(objective: Objective, net: Net, opt: torch.optim.Optimizer, corrupted: object, *, lr: float,
               grad_clip: float) -> torch.Tensor:
    """One optimiser step at learning rate ``lr`` on the objective's loss of ``corrupted`` (the gradient's
    norm clipped to ``grad_clip``). Returns the loss."""
    for group in opt.param_groups:
        group["lr"] = lr
    loss = objective.loss(net, corrupted)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.model.parameters(), grad_clip)
    opt.step()
    return loss
