"""A decoding policy for a serving engine: the playground's DecodeConfig as it runs block by block.

Serving engines such as SGLang decode block-causal models (LLaDA2, SDAR) one block at a time and
know nothing of the request's total length, so the policy they run is the per-block part of a
DecodeConfig: the schedule restarts in every block (`block_schedule="restart"`), staged
temperature is staged by thirds of the block's steps, and each block draws from its own generator.

`Policy.block_config(masks)` is the one bridge: the DecodeConfig that the playground decodes one
block with, and that the SGLang plugin (`dllm_viz.serve.sglang`) evaluates its quotas,
temperatures and draws through, so both share one implementation of the article's rules.

`policy.yaml` is the policy as a YAML mapping; SGLang passes it to the plugin unchanged
(`--dllm-algorithm-config`) and itself reads `block_size` from it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from dllm_viz.core import rules
from dllm_viz.core.config import KNOBS, MAX_SEED, DecodeConfig
from dllm_viz.core.knobs import Knob
from dllm_viz.serve import ALGORITHM_NAME, SGLANG_VERSION

# Block sizes SGLang uses for the dLLM architectures it serves (sglang/srt/dllm/config.py); LLaDA2
# checkpoints with expert routing refuse any other block size.
SGLANG_BLOCK_SIZES = {"LLaDA2MoeModelLM": 32, "SDARForCausalLM": 4, "SDARMoeForCausalLM": 4}
POLICY_FORMAT = 1  # bump when a key changes meaning; `from_mapping` refuses other formats
REQUEST_SAMPLING = ("override", "ignore")
LAUNCHERS = ("launch_server", "serve")


def _bad(name: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is invalid: expected {allowed}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _served(knob: Knob) -> bool:
    """A DecodeConfig field a policy carries under its own name: its spec says so (`Knob.policy`), and a
    plug-in's knob only when a plug-in that reads it is served (WINO's verify pass is a second forward,
    which SGLang's DllmAlgorithm.step, given one forward's logits, cannot run)."""
    readers = rules.readers(knob.name)
    return knob.policy is True and (not readers or any(p.served is True for p in readers))


# The DecodeConfig fields a policy carries, under the same names, meanings and validation (derived from the
# knob specs, `core.knobs` and the rule plug-ins); with `block_size` (a block's gen_length) and
# `steps_per_block` (its `steps`) they are policy.yaml's keys.
CONFIG_KEYS = tuple(k.name for k in KNOBS if _served(k))
# Plug-ins a policy cannot run (not `served`), by the knob that chooses them.
NOT_SERVED = {knob: tuple(name for name, p in rules.PLUGINS[kind].items() if p.served is not True)
              for knob, kind in rules.CHOOSERS.items()}
# `end_of_text_ids`: the checkpoint's end-of-text ids, which the early stop predicts and fills with (the
# plugin sees token ids only; `core.end_of_text.end_of_text_ids` of the model, the decoder's own rule);
# required with early_stop. Policies written before it carry one `eos_token_id`, read as a list of one.
# `edit_token_ids`: the checkpoint's [DELETE, SPLIT] ids (LLaDA 2.2's config.json `delete_token_id`,
# `split_token_id`), which an insert/delete rule writes and no other rule may; required with `indel`.
POLICY_KEYS = (*(k.policy if isinstance(k.policy, str) else k.name for k in KNOBS
                 if isinstance(k.policy, str) or _served(k)), "end_of_text_ids", "edit_token_ids", "request_sampling")
# Values no serving policy runs: teaching mistakes that no shipped sampler makes.
NOT_EXPORTED = {"confidence_from": "tempered", "rng": "shared"}


@dataclass(frozen=True, init=False)
class Policy:
    """A DecodeConfig as a serving engine runs it: block by block, k restarting in every block.

    `block` is the DecodeConfig of one whole block (gen_length = block_size, steps = the block's
    step budget, block_schedule "restart"). The policy's other keys (CONFIG_KEYS) read through to
    it, so their names, defaults and validation are DecodeConfig's own. Construct with keywords:
    `Policy(block_size=32, schedule="fixed_steps", steps_per_block=8, temperature=0.7)`.
    """

    block: DecodeConfig  # how one whole block decodes
    request_sampling: str  # "override": a request's non-default temperature/top_p/top_k win; "ignore"
    end_of_text_ids: tuple[int, ...]  # the checkpoint's end-of-text ids (the early stop's tokens); () without
    edit_token_ids: tuple[int, ...]  # the checkpoint's (DELETE, SPLIT) ids; () when it declares none

    def __init__(self, *, block_size: int = 32, steps_per_block: int | None = None,
                 request_sampling: str = "override", end_of_text_ids: Sequence[int] | None = None,
                 eos_token_id: int | None = None, edit_token_ids: Sequence[int] | None = None, **fields: Any) -> None:
        if not _is_int(block_size) or block_size < 1:
            raise _bad("block_size", block_size, "an integer >= 1")
        if steps_per_block is None:
            steps_per_block = max(1, block_size // 2)
        if not _is_int(steps_per_block) or not 1 <= steps_per_block <= block_size:
            raise _bad("steps_per_block", steps_per_block, f"an integer in [1, block_size={block_size}]")
        if request_sampling not in REQUEST_SAMPLING:
            raise _bad("request_sampling", request_sampling, "one of " + " | ".join(REQUEST_SAMPLING))
        for key, value in fields.items():
            if key not in CONFIG_KEYS:
                raise _bad(key, value, "no such policy key; known keys: " + ", ".join(sorted(POLICY_KEYS)))
        if fields.get("top_k") is None:  # fixed here: a block's k does not follow its number of masks
            fields["top_k"] = max(1, block_size // 4)
        if isinstance(fields.get("temperature_stages"), list):
            fields["temperature_stages"] = tuple(fields["temperature_stages"])
        for key, refused in NOT_SERVED.items():
            if fields.get(key) in refused:
                kind = rules.PLUGINS[rules.CHOOSERS[key]]
                served = " | ".join(name for name, p in kind.items() if p.served is True)
                raise _bad(key, fields[key], f"{served}: {kind[fields[key]].served}")
        block = DecodeConfig(gen_length=block_size, steps=steps_per_block, block_schedule="restart", **fields)
        ends = _end_of_text_ids(end_of_text_ids, eos_token_id)
        if block.early_stop and not ends:
            raise _bad("end_of_text_ids", list(ends), "the checkpoint's end-of-text token ids with early_stop=True "
                       "(the plugin sees token ids only: end_of_text_ids(model), e.g. its tokenizer's eos_token_id)")
        edits = _edit_token_ids(edit_token_ids)
        if block.indel != "none" and not edits:
            raise _bad("edit_token_ids", list(edits), f"the checkpoint's [delete_token_id, split_token_id] with "
                       f"indel={block.indel!r} (a checkpoint trained to edit lengths declares them in its config.json)")
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "request_sampling", request_sampling)
        object.__setattr__(self, "end_of_text_ids", ends)
        object.__setattr__(self, "edit_token_ids", edits)

    @property
    def eos_token_id(self) -> int | None:
        """The first end-of-text id (the checkpoint's EOS), or None."""
        return self.end_of_text_ids[0] if self.end_of_text_ids else None

    @property
    def delete_token_id(self) -> int | None:
        return self.edit_token_ids[0] if self.edit_token_ids else None

    @property
    def split_token_id(self) -> int | None:
        return self.edit_token_ids[1] if self.edit_token_ids else None

    @property
    def block_size(self) -> int:
        """Positions per block (SGLang reads this key as its block size)."""
        return self.block.gen_length

    @property
    def steps_per_block(self) -> int:
        """The step budget of one whole block (fixed_steps)."""
        return self.block.total_steps

    def replace(self, **changes: Any) -> Policy:
        """A copy with `changes` (policy keys) applied, validated again."""
        mapping = self.to_mapping()
        if "eos_token_id" in changes and "end_of_text_ids" not in changes:
            del mapping["end_of_text_ids"]  # the old one-id key replaces the list
        return type(self).from_mapping({**mapping, **changes})

    # ----- the bridge to the playground -----------------------------------------------------
    def block_config(self, masks: int, *, seed: int = 0) -> DecodeConfig:
        """The DecodeConfig that decodes one block holding `masks` masked positions.

        One block of `masks` positions: the step budget is capped at one step per mask when the
        block is shorter (e.g. the prompt's partial block).
        """
        if not _is_int(masks) or masks < 1:
            raise _bad("masks", masks, "an integer >= 1 (a block with no mask needs no config)")
        return self.block.replace(gen_length=masks, steps=min(self.steps_per_block, masks), seed=seed)

    def to_decode_config(self, *, num_blocks: int = 1, seed: int = 0) -> DecodeConfig:
        """The playground config that runs this policy over `num_blocks` whole blocks."""
        if not _is_int(num_blocks) or num_blocks < 1:
            raise _bad("num_blocks", num_blocks, "an integer >= 1")
        return self.block.replace(gen_length=self.block_size * num_blocks, block_length=self.block_size,
                                  steps=self.steps_per_block * num_blocks, seed=seed)

    @classmethod
    def from_decode_config(cls, config: DecodeConfig, **changes: Any) -> Policy:
        """The policy a playground config runs per block; ValueError when it cannot run per block.

        Refused: the teaching mistakes no shipped sampler makes (NOT_EXPORTED; the confidence
        sources of the LLaDA, Dream and Fast-dLLM presets are exported), a top-k decay that
        carries k across blocks, and a rule SGLang's loop cannot run (NOT_SERVED: WINO, a second forward).
        `changes` override keys (e.g. `request_sampling`).
        """
        if not isinstance(config, DecodeConfig):
            raise _bad("config", config, "a DecodeConfig")
        for name, wrong in NOT_EXPORTED.items():
            if getattr(config, name) == wrong:
                raise _bad(name, wrong, f"not {wrong!r}: a teaching mistake no shipped sampler makes is not exported")
        for canvas in rules.CANVAS_RULES.values():  # a canvas that is not masked: its own loop, not this plugin's
            knob = next((k for k in canvas.owned if getattr(config, k.name) != k.default), None)
            if knob is not None and canvas.served is not True:
                raise _bad(knob.name, getattr(config, knob.name), f"its default: a {canvas.name} canvas has no "
                           f"dllm-viz policy ({canvas.served})")
        if config.gen_length == 0:
            raise _bad("gen_length", 0, "an integer >= 1: an empty generation has no policy")
        if config.schedule == "topk_decay" and config.num_blocks > 1 and config.block_schedule != "restart":
            raise _bad("block_schedule", config.block_schedule,
                       "'restart' for a multi-block topk_decay config: SGLang restarts k at top_k in every block")
        fields: dict[str, Any] = {name: getattr(config, name) for name in CONFIG_KEYS}
        fields.update(block_size=config.block_size, top_k=config.initial_k,
                      steps_per_block=config.total_steps // config.num_blocks)
        return cls(**{**fields, **changes})

    # ----- policy.yaml ----------------------------------------------------------------------
    def to_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy_format": POLICY_FORMAT}
        for key in POLICY_KEYS:
            value = getattr(self, key)
            out[key] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_mapping(cls, mapping: Any) -> Policy:
        """Read the mapping of a policy.yaml; unknown keys raise ValueError naming the key."""
        if not isinstance(mapping, dict):
            raise _bad("policy", mapping, "a mapping of policy keys to values")
        values = dict(mapping)
        fmt = values.pop("policy_format", POLICY_FORMAT)
        if fmt != POLICY_FORMAT:
            raise _bad("policy_format", fmt, f"{POLICY_FORMAT} (written by this dllm-viz version)")
        return cls(**values)

    def to_yaml(self, *, source: str | None = None) -> str:
        import yaml

        head = [
            f"# dllm-viz decoding policy for SGLang {SGLANG_VERSION} (--dllm-algorithm {ALGORITHM_NAME}).",
            "# Each block: confidence from raw logits, the schedule picks positions, tokens are drawn",
            "# only there at the (staged) temperature; k restarts in every block. Keys mirror DecodeConfig.",
        ]
        if source:
            head.append(f"# Exported from: {source}")
        return "\n".join(head) + "\n" + yaml.safe_dump(self.to_mapping(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> Policy:
        import yaml

        return cls.from_mapping(yaml.safe_load(text) or {})

    def save(self, path: str | Path, *, source: str | None = None) -> Path:
        path = Path(path)
        path.write_text(self.to_yaml(source=source), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        return cls.from_yaml(Path(path).read_text(encoding="utf-8"))


def _end_of_text_ids(ids: Any, eos_token_id: Any) -> tuple[int, ...]:
    """The policy's end-of-text ids from the `end_of_text_ids` list or the older one-id `eos_token_id`."""
    if eos_token_id is not None and (not _is_int(eos_token_id) or eos_token_id < 0):
        raise _bad("eos_token_id", eos_token_id, "None or a non-negative token id")
    if ids is None:
        return (eos_token_id,) if eos_token_id is not None else ()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) or not all(_is_int(i) and i >= 0 for i in ids):
        raise _bad("end_of_text_ids", ids, "a list of non-negative token ids")
    ends = tuple(ids)
    if eos_token_id is not None and (not ends or ends[0] != eos_token_id):
        raise _bad("eos_token_id", eos_token_id, f"None or the first of end_of_text_ids={list(ends)}")
    return ends


def _edit_token_ids(ids: Any) -> tuple[int, ...]:
    """The policy's (DELETE, SPLIT) ids: none, or two distinct non-negative token ids."""
    if ids is None:
        return ()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) or len(ids) not in (0, 2) or \
            not all(_is_int(i) and i >= 0 for i in ids) or (ids and ids[0] == ids[1]):
        raise _bad("edit_token_ids", ids,
                   "[] or two distinct non-negative token ids: [delete_token_id, split_token_id]")
    return tuple(ids)


def _read_through(name: str) -> property:
    return property(lambda self: getattr(self.block, name), doc=f"DecodeConfig.{name} of every block")


for _key in CONFIG_KEYS:
    setattr(Policy, _key, _read_through(_key))


# ----- seeds -------------------------------------------------------------------------------
def _digest(text: str) -> int:
    """A stable 63-bit integer of `text` (blake2b; Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little") & MAX_SEED


def request_seed(rid: str) -> int:
    """The seed of a request that sent none: a stable hash of its request id."""
    return _digest(f"rid:{rid}")


def block_seed(seed: int, block_start: int) -> int:
    """The seed of the generator of the block that starts at absolute position `block_start`.

    A serving engine keeps no state between a request's blocks, so each block gets its own
    generator; deriving it from the block's position keeps every tensor-parallel rank, every
    retry and every batch composition on the same stream.
    """
    return _digest(f"block:{seed}:{block_start}")


# ----- notes and the launch command -------------------------------------------------------
def differences(config: DecodeConfig) -> list[str]:
    """How SGLang running `Policy.from_decode_config(config)` differs from decoding `config` here."""
    notes = []
    sampled = config.temperature > 0 or config.temperature_stages is not None
    if config.temperature_stages is not None and config.num_blocks > 1:
        notes.append("staged temperature: the playground stages by thirds of the whole generation's steps, "
                     "SGLang by thirds of each block's steps")
    if sampled:
        notes.append("random draws: SGLang seeds one generator per block (block_seed(request seed, block start)), "
                     "the playground one per request; sampled tokens follow the same distributions but not the "
                     "same random stream (argmax decoding is identical)")
    if config.revise == "joint_threshold":
        notes.append("token editing: the plugin rewrites visible tokens from SGLang's logits at them, which only a "
                     "checkpoint trained to predict there (LLaDA 2.1) gives meaning to; the plugin cannot check it")
    if config.revise == "joint_threshold" and config.penalty_lambda > 0:
        notes.append("penalty_lambda: SGLang's JointThreshold penalises a block's first generated position by the "
                     "prompt token before it in the same block; the playground and this plugin start each block's "
                     "penalty at its first generated position")
    if config.cache != "none":
        notes.append(f"cache={config.cache!r} is not exported: SGLang serves block-causal models (LLaDA2, SDAR), whose "
                     "blocks never attend to later ones, so it keeps the finished blocks' keys and values exactly "
                     "and needs no approximate cache; the playground's prefix and dual caches approximate a "
                     "bidirectional model's forward (the tokens may differ from the uncached decode)")
    if config.indel != "none":
        notes.append("insert/delete: SGLang's blocks start at multiples of block_size, so a prompt's last block is "
                     "partly prompt (kept as it is, as SGLang's JointThresholdInDel keeps it) and its update limit "
                     "counts the whole block; the playground's blocks start at the generation")
    if config.early_stop:
        notes.append("early stop: SGLang fills the current block with end-of-text and the request then ends at "
                     "SGLang's own stop check on that token (not with ignore_eos); the playground also fills "
                     "the later blocks, which SGLang never starts")
    return notes


def launch_command(
    model_path: str, policy_path: str | Path, *, launcher: str = "launch_server", extra: Sequence[str] = ()
) -> list[str]:
    """The argv that serves `model_path` with this policy (`launcher`: launch_server | serve)."""
    if launcher not in LAUNCHERS:
        raise _bad("launcher", launcher, "one of " + " | ".join(LAUNCHERS))
    head = ["python", "-m", "sglang.launch_server"] if launcher == "launch_server" else ["sglang", "serve"]
    return [*head, "--model-path", str(model_path), "--dllm-algorithm", ALGORITHM_NAME,
            "--dllm-algorithm-config", str(policy_path), *extra]
