"""Train (and export) the embedded masked-diffusion model: ``python -m dllm_viz.train {fit,tokenize,average,export}``.

One subcommand per job: ``fit`` trains (or resumes) a run (`loop.fit`, one flag per field of
`config.TrainConfig`), ``tokenize`` trains the tokenizer and caches the token streams (`data`),
``average`` averages checkpoints and ``export`` writes a run in the embedded format (`checkpoint`).
The objective (`objectives`: the masked default, LLaDA 2.1's editing stream) follows from the flags.

The recipe of ``dllm_viz/assets/embedded`` (data from ``scripts/prepare_data.py``; details and figures in
``dllm_viz/assets/embedded/MODEL_CARD.md``)::

    python -m dllm_viz.train fit --data DATA --out RUN --threads 1 --steps 2000 --batch-size 16 \\
        --warmup 100 --lr 2e-3 --eval-every 200 --eval-windows 48 --ckpt-every 100 --resume
    python -m dllm_viz.train fit --data DATA --out FT --init-from RUN/ckpt.pt --threads 1 --steps 500 \\
        --batch-size 16 --warmup 50 --lr 6e-4 --prompt-fraction 0.5 --eval-every 100 --eval-windows 48
    python -m dllm_viz.train fit --data DATA --out FT3 --init-from FT/ckpt.pt --threads 1 --steps 1400 \\
        --batch-size 16 --warmup 50 --lr 5e-4 --min-lr-ratio 0.02 --prompt-fraction 0.5 --eval-every 200
    python -m dllm_viz.train fit --data DATA --out GROW --init-from FT3/ckpt.pt --vocab-size 12288 \\
        --threads 2 --steps 3200 --batch-size 16 --warmup 50 --lr 8e-4 --min-lr-ratio 0.05 --prompt-fraction 0.5
    python -m dllm_viz.train fit --data DATA --out GROW16 --init-from GROW/ckpt.pt --vocab-size 16384 \\
        --bf16 false --threads 2 --steps 1150 --batch-size 16 --warmup 100 --lr 4e-4 --min-lr-ratio 0.02 \\
        --prompt-fraction 0.5 --time-limit 62
    python -m dllm_viz.train export --run GROW16 --out dllm_viz/assets/embedded
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path

from dllm_viz.train.checkpoint import export, write_average
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.data import load_corpus
from dllm_viz.train.loop import fit

FLAG_VALUES = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def bool_flag(text: str) -> bool:
    """A boolean flag's value, strictly: true / false, 1 / 0, yes / no in any case. Anything else
    ("flase") is a usage error, never False (the rule of `python -m dllm_viz generate`'s flags too)."""
    value = FLAG_VALUES.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected one of {', '.join(FLAG_VALUES)}")
    return value


class _CliFormatter(logging.Formatter):
    """The command line's own lines as plain text; warnings and errors say what they are."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.levelno <= logging.INFO else f"{record.levelname.lower()}: {text}"


def log_to_stdout() -> None:
    """For the command line (``python -m dllm_viz.train``): what the library logs (fit's progress at
    INFO, warnings) becomes the command's output, one plain line each. A program that calls `fit`
    configures logging its own way."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_CliFormatter("%(message)s"))
    logger = logging.getLogger("dllm_viz")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``fit`` (a flag per `TrainConfig` field besides the run's own), ``tokenize``,
    ``export``, ``average``."""
    parser = argparse.ArgumentParser(prog="python -m dllm_viz.train", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fit = sub.add_parser("fit", help="train (or resume) a run")
    p_fit.add_argument("--data", type=Path, required=True, help="folder with train.txt and heldout.txt")
    p_fit.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, logs)")
    p_fit.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if present")
    p_fit.add_argument("--init-from", type=Path, default=None,
                       help="start from this checkpoint's weights (RUN/ckpt.pt, or an exported folder such as "
                            "dllm_viz/assets/world)")
    p_fit.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p_fit.add_argument("--device", default="cpu")
    p_fit.add_argument("--time-limit", type=float, default=None, help="stop (and checkpoint) after N minutes")
    p_fit.add_argument("--no-progress", action="store_true")
    p_fit.add_argument("--keep-snapshots", action="store_true",
                       help="also keep each checkpoint's weights as OUT/snapshots/step-NNNNNN.pt (for `average`)")
    p_fit.add_argument("--compile", nargs="?", const=True, default=False,
                       help="torch.compile the model body (optionally name a backend: --compile eager)")
    for name, default in asdict(TrainConfig()).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):  # "--bf16" alone means true; "--bf16 false" still works; "flase" is an error
            p_fit.add_argument(flag, type=bool_flag, nargs="?", const=True, default=default, metavar="{true,false}")
        else:
            p_fit.add_argument(flag, type=type(default), default=default)
    p_tok = sub.add_parser("tokenize", help="train the tokenizer and cache both token streams in a run folder")
    p_tok.add_argument("--data", type=Path, required=True, help="folder with train.txt and heldout.txt")
    p_tok.add_argument("--out", type=Path, required=True, help="run folder (tokenizer.json, tokens.pt)")
    p_tok.add_argument("--vocab-size", type=int, default=TrainConfig().vocab_size)
    p_exp = sub.add_parser("export", help="write assets (safetensors fp16, config, tokenizer)")
    p_exp.add_argument("--run", type=Path, required=True)
    p_exp.add_argument("--out", type=Path, required=True)
    p_exp.add_argument("--name", default=None, help="model name written to config.json")
    p_avg = sub.add_parser("average", help="average checkpoints' weights into a run folder that `export` takes")
    p_avg.add_argument("--run", type=Path, required=True, help="run whose tokenizer and recipe the average keeps")
    p_avg.add_argument("--out", type=Path, required=True)
    p_avg.add_argument("checkpoints", type=Path, nargs="+", help="ckpt.pt files or snapshots, one architecture")
    return parser


def main(argv: list[str] | None = None) -> None:
    """``python -m dllm_viz.train`` with ``argv`` (default: the process's arguments)."""
    args = build_parser().parse_args(argv)
    if args.command == "average":
        print(write_average(args.run, args.checkpoints, args.out))
        return
    if args.command == "tokenize":
        args.out.mkdir(parents=True, exist_ok=True)
        tokenizer, train_tokens, heldout_tokens, cpt = load_corpus(args.data, args.out, args.vocab_size)
        print(json.dumps({"vocab_size": tokenizer.vocab_size, "train_tokens": train_tokens.numel(),
                          "heldout_tokens": heldout_tokens.numel(), "heldout_chars_per_token": round(cpt, 3)}))
        return
    if args.command == "export":
        print(export(args.run, args.out, name=args.name))
        return
    cfg = TrainConfig(**{k: getattr(args, k) for k in asdict(TrainConfig())})
    fit(cfg, data=args.data, run=args.out, resume=args.resume, init_from=args.init_from, threads=args.threads,
        device=args.device,
        time_limit_min=args.time_limit, progress=not args.no_progress, compile=args.compile,
        keep_snapshots=args.keep_snapshots)
