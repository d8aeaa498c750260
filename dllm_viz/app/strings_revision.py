"""English / 中文 strings of confirmations taken back (issue 28): the revision rules' knobs, help, marks
and lessons: key -> (en, zh). Merged by `i18n`."""
from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    # ----- lessons ----------------------------------------------------------------------------
    "mt_final_logprob": ("mean raw log-prob of the final tokens (each at its last decision)",
                         "最终文本中各词的平均原始对数概率（取其最后一次决定时）"),
    "mt_revisions": ("tokens taken back or rewritten per request", "每个请求撤回或改写的词数"),
    # ----- figures ----------------------------------------------------------------------------
    "rv_confirmed": ("confirmed", "确认"),
    "rv_remasked": ("taken back", "撤回"),
    "rv_edited": ("rewritten", "改写"),
    "rv_was": ("was", "原为"),
    "rv_score": ("score", "分数"),
    "rv_score_remdm": ("σ", "σ"),
    "rv_score_rcr": ("decided with", "确认时置信度"),
    "rv_score_wino": ("verify p", "验证 p"),
    "rv_earlier": ("… {n} earlier", "……更早 {n} 次"),
    "rv_decided": ("decided {n}×", "决定 {n} 次"),
    "rv_step": ("{r} taken back · {e} rewritten", "撤回 {r} 个 · 改写 {e} 个"),
    "rv_forwards": ("{n} forwards (verify pass)", "{n} 次前向（验证）"),
    "rv_per_step": ("taken back + rewritten", "撤回 + 改写"),
    "rv_heatmap_key": ("× taken back, ◇ rewritten", "× 撤回，◇ 改写"),
    "fig_order_revised": ("Order (colour = step last decided; ×n = decided n times)",
                          "顺序（颜色 = 最后一次决定的步；×n = 决定了 n 次）"),
}
