"""dllm_viz.train.renoise / renoise_fit: the uniform-noise objective with self-conditioning, in transformers'
DiffusionGemmaForBlockDiffusion, on a tiny configuration (the shipped model: test_world_renoise_model.py)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from transformers import DiffusionGemmaForBlockDiffusion

from dllm_viz import assets
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train import renoise_fit
from dllm_viz.train.renoise import (
    RenoiseConfig,
    build_model,
    corrupt,
    encode,
    renoise_loss,
    sample_blocks,
    sample_t,
    sentence_starts,
)
from dllm_viz.world import generate

TINY = RenoiseConfig(hidden_size=32, n_layers=2, n_heads=2, n_kv_heads=1, head_dim=16, intermediate_size=64,
                     num_experts=2, top_k_experts=1, moe_intermediate_size=32, sliding_window=32, canvas_length=4,
                     max_context=8, batch_size=8, steps=6, warmup=1, eval_every=3, eval_windows=8, ckpt_every=3)


@pytest.fixture(scope="module")
def tokenizer() -> EmbeddedTokenizer:
    return EmbeddedTokenizer.from_file(assets.path("world") / "tokenizer.json")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small world corpus (the generator is seeded; no real data in the tests)."""
    root = tmp_path_factory.mktemp("renoise-data")
    (root / "train.txt").write_text("\n".join(generate(300, 1)) + "\n")
    (root / "heldout.txt").write_text("\n".join(generate(20, 2)) + "\n")
    return root


def _stream(tokenizer: EmbeddedTokenizer, n: int = 20) -> torch.Tensor:
    return torch.tensor(tokenizer.encode("\n".join(generate(n, 3)) + "\n"))


def test_corrupt_replaces_a_share_t_with_uniform_ids_of_the_whole_vocabulary() -> None:
    gen = torch.Generator().manual_seed(0)
    x0 = torch.full((4, 4000), 7)
    t = torch.tensor([0.0, 0.25, 0.75, 1.0])
    xt, replaced = corrupt(x0, t, 50, gen)
    share = replaced.float().mean(1)
    assert share[0] == 0 and share[3] == 1 and abs(share[1] - 0.25) < 0.03 and abs(share[2] - 0.75) < 0.03
    assert torch.equal(xt[~replaced], x0[~replaced])
    drawn = xt[3]
    assert drawn.min() == 0 and drawn.max() == 49  # specials (0, 1, 2) too: generate()'s initial canvas draws them
    counts = torch.bincount(drawn, minlength=50).float()
    assert counts.std() / counts.mean() < 0.3  # uniform (80 expected per id)


def test_sample_t_is_stratified_in_t_min_to_one() -> None:
    t = sample_t(8, 0.01, torch.Generator().manual_seed(0))
    assert t.min() >= 0.01 and t.max() < 1
    assert torch.equal(((t - 0.01) / 0.99 * 8).floor().long(), torch.arange(8))  # one level per eighth


def test_blocks_start_a_line_and_the_canvas_follows_the_context(tokenizer: EmbeddedTokenizer) -> None:
    tokens = _stream(tokenizer)
    newline = tokenizer.encode("\n")[0]
    starts = sentence_starts(tokens, newline, 5 + 4)
    assert starts[0] == 0 and all(tokens[s - 1] == newline for s in starts[1:].tolist())
    assert (starts + 9 <= tokens.numel()).all()
    context, x0 = sample_blocks(tokens, starts, 16, 5, 4, torch.Generator().manual_seed(0))
    assert context.shape == (16, 5) and x0.shape == (16, 4)
    text = [tokenizer.decode(row) for row in torch.cat([context, x0], 1).tolist()]
    first_names = {s.split()[0] for s in generate(20, 3)}
    assert all(t.split()[0] in first_names for t in text)  # every context starts a sentence, as a prompt does


def test_build_model_is_seeded_and_leaves_the_global_rng_alone(tokenizer: EmbeddedTokenizer) -> None:
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    a, b = build_model(TINY, tokenizer), build_model(TINY, tokenizer)
    c = build_model(replace(TINY, seed=1), tokenizer)
    assert torch.equal(torch.random.get_rng_state(), before)
    wa, wb, wc = (m.model.decoder.embed_tokens.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert a.config.canvas_length == 4 and a.config.text_config.vocab_size == tokenizer.vocab_size
    assert a.model.encoder.language_model.layers[0].mlp.up_proj.weight is a.model.decoder.layers[0].mlp.up_proj.weight


def test_the_loss_reads_the_context_through_the_encoders_cache(tokenizer: EmbeddedTokenizer) -> None:
    model = build_model(TINY, tokenizer)
    tokens = _stream(tokenizer)
    starts = sentence_starts(tokens, tokenizer.encode("\n")[0], 9)
    context, x0 = sample_blocks(tokens, starts, 8, 5, 4, torch.Generator().manual_seed(0))
    t = torch.full((8,), 0.5)
    cache, _ = encode(model, context)
    assert cache.layers[0].keys.requires_grad  # the decoder's loss reaches the encoder's keys and values
    losses = [renoise_loss(model, c, x0, t, torch.Generator().manual_seed(1), self_cond_p=0.5,
                           encoder_loss_weight=0.0).diffusion.item() for c in (context, context.flip(0))]
    assert losses[0] != losses[1]  # same canvases and noise, other contexts


def test_self_conditioning_rows_read_the_first_pass_and_the_others_do_not(tokenizer: EmbeddedTokenizer) -> None:
    model = build_model(TINY, tokenizer).eval()
    tokens = _stream(tokenizer)
    starts = sentence_starts(tokens, tokenizer.encode("\n")[0], 9)
    context, x0 = sample_blocks(tokens, starts, 8, 5, 4, torch.Generator().manual_seed(0))
    t = torch.full((8,), 0.5)
    with torch.no_grad():
        out = {p: renoise_loss(model, context, x0, t, torch.Generator().manual_seed(1), self_cond_p=p,
                               encoder_loss_weight=1.0) for p in (0.0, 1.0)}
        xt, _ = corrupt(x0, t, tokenizer.vocab_size, torch.Generator().manual_seed(1))
        plain = model(cache=encode(model, context)[0], decoder_input_ids=xt).logits
    torch.testing.assert_close(out[0.0].logits, plain, rtol=1e-5, atol=1e-5)  # p = 0: a first step's input
    assert (out[1.0].logits - plain).abs().amax() > 1e-3
    assert out[1.0].encoder > 0 and out[1.0].loss == pytest.approx((out[1.0].diffusion + out[1.0].encoder).item())


def test_a_tiny_run_learns_logs_resumes_exactly_and_exports(data_dir: Path, tmp_path: Path,
                                                            tokenizer: EmbeddedTokenizer) -> None:
    cfg = replace(TINY, steps=12, warmup=8, eval_every=4, ckpt_every=4, lr=1e-2)  # warm-up: lr independent of steps
    renoise_fit.fit(cfg, data=data_dir, run=tmp_path / "a")
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [4, 8, 12]
    assert log[-1]["ce@0.5"] < log[0]["ce@0.5"] and log[-1]["encoder_bits"] < log[0]["encoder_bits"]
    renoise_fit.fit(replace(cfg, steps=8), data=data_dir, run=tmp_path / "b")
    renoise_fit.fit(cfg, data=data_dir, run=tmp_path / "b", resume=True)
    a = torch.load(tmp_path / "a" / "ckpt.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "b" / "ckpt.pt", weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)  # 8 steps, stop, resume to 12 == 12 at once
    out = renoise_fit.export(tmp_path / "a", tmp_path / "export")
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(out).eval()
    gc = model.generation_config
    assert (gc.max_new_tokens, gc.max_denoising_steps, gc.t_min, gc.t_max,
            gc.stability_threshold) == (48, 48, 0.4, 0.8, 1)
    assert gc.sampler_config.entropy_bound == 0.1 and gc.confidence_threshold == 0.005
    assert model.dtype == torch.float32 and (out / "train_log.jsonl").is_file()
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in a.items() if k in state)
    prompt = torch.tensor([tokenizer.encode("Ana")])
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(model.generate(prompt, max_new_tokens=8, max_denoising_steps=4).sequences)
    assert runs[0].shape == (1, 9) and torch.equal(runs[0], runs[1])


def test_training_steps_lower_the_loss_on_a_fixed_batch(tokenizer: EmbeddedTokenizer) -> None:
    """The objective trains: a few AdamW steps on one fixed batch (fixed noise) lower its loss."""
    model = build_model(TINY, tokenizer)
    tokens = _stream(tokenizer)
    starts = sentence_starts(tokens, tokenizer.encode("\n")[0], 9)
    context, x0 = sample_blocks(tokens, starts, 8, 5, 4, torch.Generator().manual_seed(0))
    t = sample_t(8, 1e-3, torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        out = renoise_loss(model, context, x0, t, torch.Generator().manual_seed(2), self_cond_p=0.5,
                           encoder_loss_weight=1.0)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(out.loss.item())
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.9 * losses[0], losses


@pytest.mark.parametrize("field, value", [("canvas_length", 0), ("top_k_experts", 3), ("n_kv_heads", 3),
                                          ("sliding_window", 8), ("self_cond_p", 1.5), ("t_min", 0.0), ("lr", 0.0)])
def test_renoise_config_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        replace(TINY, **{field: value})


def test_the_command_line_trains_and_exports(data_dir: Path, tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "out"
    renoise_fit.main(["fit", "--data", str(data_dir), "--out", str(run), "--steps", "2", "--eval-every", "2",
                      "--hidden-size", "32", "--n-layers", "2", "--n-heads", "2", "--n-kv-heads", "1",
                      "--head-dim", "16",
                      "--intermediate-size", "64", "--num-experts", "2", "--top-k-experts", "1",
                      "--moe-intermediate-size", "32", "--canvas-length", "4", "--max-context", "8",
                      "--sliding-window", "32", "--batch-size", "4", "--eval-windows", "4"])
    assert json.loads((run / "train_config.json").read_text())["canvas_length"] == 4
    renoise_fit.main(["export", "--run", str(run), "--out", str(out), "--dtype", "float16"])
    assert json.loads((out / "config.json").read_text())["canvas_length"] == 4
    assert DiffusionGemmaForBlockDiffusion.from_pretrained(out).dtype == torch.float16
