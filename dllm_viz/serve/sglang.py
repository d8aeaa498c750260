"""The dllm-viz policy as an SGLang dLLM algorithm: `--dllm-algorithm DllmVizPolicy`.

SGLang (the release pinned in `dllm_viz.serve.SGLANG_VERSION`) decodes block-causal
diffusion models one block at a time. Its `DllmAlgorithm` base class owns the loop: it runs a
forward over each request's current block and calls `step`, which must advance the block's
`input_ids` in place and report, per request, whether the block is finished. In the default
first-done-first-out mode each scheduler round is one forward and one step, and the state that
`init_step_state` made is carried between rounds on the request; in synchronous mode
(`--no-dllm-fdfo`) one call runs the whole block for the whole batch.

This class is only the SGLang-facing shell. The work is in `dllm_viz.serve.blocks`, which imports
no SGLang (so the main test suite checks it on CPU): it feeds SGLang's tensors to the playground's
own step core (`dllm_viz.core.step.denoise_step`) and writes the tokens back in place. A block is
reported done only at the step after its last confirmation, when a forward has seen the final
tokens (SGLang keeps that forward's KV for the block). The per-block parameters come from
`Policy.block_config(masks)`: one DecodeConfig per block, so quotas, staged temperatures and the
defaults are the playground's own.
"""
from __future__ import annotations

from typing import Any, Callable

from dllm_viz.serve import ALGORITHM_NAME, check_sglang_version, installed_sglang_version

check_sglang_version(installed_sglang_version())  # before touching SGLang internals

from sglang.srt.dllm.algorithm import algo_name_to_cls  # noqa: E402
from sglang.srt.dllm.algorithm.base import DllmAlgorithm  # noqa: E402
from sglang.srt.sampling.sampling_params import TOP_K_ALL as SGLANG_TOP_K_ALL  # noqa: E402

from dllm_viz.core.canvas import PerRows, RowSet  # noqa: E402
from dllm_viz.core.end_of_text import end_of_text_ids  # noqa: E402
from dllm_viz.core.indel import check_edit_tokens  # noqa: E402
from dllm_viz.core.indel_rows import Carried  # noqa: E402
from dllm_viz.serve.blocks import (  # noqa: E402
    TOP_K_ALL, BlockState, advance_blocks, advance_indel_blocks, init_block_states, request_policy,
)
from dllm_viz.serve.policy import Policy  # noqa: E402
from dllm_viz.core.revision import max_steps  # noqa: E402

if SGLANG_TOP_K_ALL != TOP_K_ALL:  # the adapter reads "no top-k" as this value
    raise ImportError(f"SGLang's TOP_K_ALL={SGLANG_TOP_K_ALL} != dllm_viz.serve.blocks.TOP_K_ALL={TOP_K_ALL}")

__all__ = ["BlockState", "DllmVizPolicy", "register", "request_policy"]

# Request features this algorithm would otherwise ignore silently: (what, is it in use?).
UNSUPPORTED_REQUEST_FEATURES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("min_p", lambda sp: (sp.min_p or 0.0) > 0),
    ("logit_bias", lambda sp: bool(sp.logit_bias)),
    ("frequency_penalty", lambda sp: (sp.frequency_penalty or 0.0) != 0),
    ("presence_penalty", lambda sp: (sp.presence_penalty or 0.0) != 0),
    ("repetition_penalty", lambda sp: (sp.repetition_penalty or 1.0) != 1),
    ("json_schema / regex / ebnf / structural_tag",
     lambda sp: any(getattr(sp, k, None) for k in ("json_schema", "regex", "ebnf", "structural_tag"))),
)


class DllmVizPolicy(DllmAlgorithm):
    """The playground's decoding policy, read from `--dllm-algorithm-config policy.yaml`."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        mapping = {"block_size": config.block_size, **(config.algorithm_config or {})}
        self.policy = Policy.from_mapping(mapping)
        self.end_of_text_ids = end_of_text_ids(self.policy)  # the decoder's rule, on the policy's list
        self.row_sets: PerRows[RowSet] = PerRows()  # the blocks' StepParams, kept while the batch is the same
        if self.policy.block_size != self.block_size:
            raise ValueError(
                f"block_size={self.policy.block_size} in the policy is invalid: SGLang runs blocks of "
                f"{self.block_size}; they must agree"
            )
        # An insert/delete rule's edit tokens: the policy's (SGLang fills DllmConfig's only for its own class).
        self.edit_ids = self.policy.edit_token_ids
        given = (getattr(config, "delete_token_id", None), getattr(config, "split_token_id", None))
        if None not in given and self.edit_ids and tuple(given) != self.edit_ids:
            raise ValueError(f"edit_token_ids={list(self.edit_ids)} in the policy is invalid: the checkpoint "
                             f"declares {list(given)}; they must agree")
        self.tokens = None
        if self.policy.indel != "none":
            self.tokens = check_edit_tokens(2**31 - 1, self.mask_id, *self.edit_ids)
        self.indel_rows = Carried()  # an insert/delete rule's state of the blocks stepping together

    @classmethod
    def validate_request(cls, req: Any) -> str | None:
        """Refuse, with a message, what this algorithm would ignore or cannot apply."""
        sp = req.sampling_params
        used = [name for name, in_use in UNSUPPORTED_REQUEST_FEATURES if in_use(sp)]
        if used:
            return f"{ALGORITHM_NAME} does not apply {', '.join(used)}; remove them from the request"
        try:
            request_policy(Policy(), temperature=sp.temperature, top_p=sp.top_p, top_k=sp.top_k)
        except ValueError as err:
            return f"{ALGORITHM_NAME}: {err}"
        return None

    def max_steps(self, block_size: int) -> int:
        """Steps SGLang's synchronous loop allows one block: block_size + 1, or the bound of the
        policy's revision rule (joint_threshold's edit-only steps, remdm's loop) plus one."""
        return max(super().max_steps(block_size), max_steps(self.policy.block) + 1)

    # ----- the adapter ------------------------------------------------------------------------
    def init_step_state(self, forward_batch: Any) -> list[BlockState]:
        return init_block_states(forward_batch, self.policy, block_size=self.block_size, mask_id=self.mask_id)

    def step(self, forward_batch: Any, full_logits: Any, states: list[BlockState]) -> list[bool]:
        if self.tokens is not None:  # the policy's rule inserts and deletes: its step on whole blocks
            return advance_indel_blocks(forward_batch, full_logits, states, block_size=self.block_size,
                                        tokens=self.tokens, carried=self.indel_rows)
        return advance_blocks(forward_batch, full_logits, states, block_size=self.block_size, mask_id=self.mask_id,
                              end_of_text_ids=self.end_of_text_ids, row_sets=self.row_sets, edit_ids=self.edit_ids)


def register() -> None:
    """Add DllmVizPolicy to SGLang's algorithm registry (what the entry point calls)."""
    algo_name_to_cls[ALGORITHM_NAME] = DllmVizPolicy
