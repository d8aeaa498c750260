"""models.diffusion_gemma: a tiny DiffusionGemma checkpoint loaded by Hub id from a local Hugging Face
cache, offline, through `load_model`; its generation_config.json becomes the decode's defaults, as in
`generate()`; and the adapter's calls are the ones `generate()` makes."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
import torch

from dllm_viz.core.renoise import RenoiseSettings, settings_from
from dllm_viz.core.renoise_decoder import renoise_decode
from dllm_viz.models import load_model
from dllm_viz.models.diffusion_gemma import HUB_IDS, DiffusionGemmaRenoiser, is_diffusion_gemma
from dllm_viz.models.renoiser import Renoiser, is_renoiser
from tests.checkpoints import put_in_hub_cache
from tests.diffusion_gemma_tiny import GENERATION, record_generate, save_tiny, tiny_model

REPO = "test-org/tiny-diffusiongemma"
BARE = "test-org/tiny-diffusiongemma-bare"  # no generation_config.json: transformers' global defaults


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("hf-cache")
    commits = {REPO: put_in_hub_cache(root, REPO, save_tiny),
               BARE: put_in_hub_cache(root, BARE, lambda p: save_tiny(p, generation=None))}
    return root, commits


@pytest.fixture()
def offline(cache, monkeypatch: pytest.MonkeyPatch):
    root, commits = cache
    attempts: list = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", lambda self, *a: refuse(*a))
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield commits
    assert attempts == []


def test_loads_by_hub_id_offline_as_a_renoiser(offline):
    model = load_model(REPO, device="cpu")
    assert isinstance(model, DiffusionGemmaRenoiser) and isinstance(model, Renoiser) and is_renoiser(model)
    assert type(model.model).__name__ == "DiffusionGemmaForBlockDiffusion"  # transformers' class, no remote code
    assert model.name == f"{REPO}@{offline[REPO]}"
    assert (model.vocab_size, model.canvas_length, model.device) == (256, 8, torch.device("cpu"))
    assert model.tokenizer.encode("the cat") == [2, 3, 4]
    forced = load_model(REPO, device="cpu", kind="diffusion_gemma")
    assert isinstance(forced, DiffusionGemmaRenoiser)


def test_generation_config_json_gives_the_defaults(offline):
    model = load_model(REPO, device="cpu")
    defaults = model.generation_defaults()
    settings = settings_from(defaults, seed=3)
    assert (settings.max_new_tokens, settings.max_denoising_steps, settings.entropy_bound) == (12, 5, 0.7)
    assert (settings.t_min, settings.t_max, settings.stability_threshold) == (0.3, 1.1, 2)
    assert (settings.confidence_threshold, settings.eos_token_ids, settings.pad_token_id) == (0.5, (1, 9), 0)
    assert settings.max_new_tokens == GENERATION["max_new_tokens"]
    bare = settings_from(load_model(BARE, device="cpu").generation_defaults())
    assert bare == RenoiseSettings()  # transformers' global defaults, no end-of-text


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_default_decode_is_generate_with_no_arguments(offline, seed):
    """Both read the checkpoint's generation config; `seed=s` draws what `torch.manual_seed(s)` draws."""
    model = load_model(REPO, device="cpu")
    prompt = model.tokenizer.encode("the dog ran far")
    reference = record_generate(model.model, torch.tensor([prompt]), seed=seed)
    ours = renoise_decode(model, ["the dog ran far"], settings_from(model.generation_defaults(), seed=seed))[0]
    assert list(ours.prompt_ids) == prompt
    assert list(ours.token_ids) == reference.sequences[0, len(prompt):].tolist()
    steps = [s for c in ours.canvases for s in c.steps]
    assert [bool(r["stopped"][0]) for c in reference.canvases for r in c] == [s.stopped for s in steps]
    assert ours.text == model.tokenizer.decode(
        [t for t in ours.token_ids][: next((i for i, t in enumerate(ours.token_ids) if t in (1, 9)), None)])


def test_the_adapter_makes_generates_calls():
    """The decoder's logits on a canvas after the cache are the model's forward on prompt and canvas at once."""
    hf = tiny_model()
    model = DiffusionGemmaRenoiser(hf)
    prompt = torch.tensor([[2, 5, 6, 7], [2, 8, 9, 10]])
    canvas = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(1))
    context = model.encode(prompt, torch.ones_like(prompt, dtype=torch.bool), None, canvas_length=8)
    logits = model.denoise(canvas, context, None)
    assert logits.shape == (2, 8, 256) and logits.dtype == torch.float32
    with torch.no_grad():
        direct = hf(input_ids=prompt, decoder_input_ids=canvas).logits  # encoder then decoder, one call
    torch.testing.assert_close(logits, direct, rtol=1e-5, atol=1e-5)
    # Self-conditioning changes the prediction; select keeps rows; a narrowed context must be re-encoded.
    assert not torch.allclose(model.denoise(canvas, context, logits), logits)
    narrowed = model.select(context, torch.tensor([1]))
    with pytest.raises(ValueError, match=r"context is invalid: it was narrowed by select\(\)"):
        model.denoise(canvas[1:], narrowed, None)
    follow = model.encode(canvas[1:], torch.ones(1, 8, dtype=torch.bool), narrowed, canvas_length=8)
    assert follow.length == 12 and follow.rows == 1
    with pytest.raises(ValueError, match=r"canvas with shape \(2, 8\) is invalid: expected \(1, 8\)"):
        model.denoise(canvas, follow, None)


def test_detection_and_hub_ids():
    assert is_diffusion_gemma({"model_type": "diffusion_gemma"})
    assert is_diffusion_gemma({"architectures": ["DiffusionGemmaForBlockDiffusion"]})
    assert not is_diffusion_gemma({"model_type": "llada"})
    assert HUB_IDS == ("google/diffusiongemma-26B-A4B-it",)
