"""English / 中文 strings of confirmations taken back (issue 28): the revision rules' knobs, help, marks
and lessons: key -> (en, zh). Merged by `i18n`."""
from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    # ----- the knobs (layout_revision) ----------------------------------------------------------
    "revise_box": ("Taking back (revision rule)", "撤回与改写（修订规则）"),
    "revise": ("revision rule", "修订规则"),
    "info_revise": ("what a step may take back to [MASK] or rewrite, inside the current block",
                    "每一步可以在当前块内把哪些已确认的词撤回为 [MASK] 或改写"),
    "choice_revise_none": ("a confirmed token is final (the article's loop)", "确认的词不再改变（文章的循环）"),
    "choice_revise_remdm": ("ReMDM: re-mask decided tokens at random, confirm as many more",
                            "ReMDM：随机把已确认的词重新掩码，再多确认同样多个"),
    "choice_revise_rcr": ("RCR: re-mask the tokens decided with the lowest confidence",
                          "RCR：把确认时置信度最低的词重新掩码"),
    "choice_revise_wino": ("WINO: draft, then a verify pass takes back what it no longer supports",
                           "WINO：先起草，再用一次验证前向撤回不再被支持的词"),
    "choice_revise_joint_threshold": ("LLaDA 2.1: rewrite visible tokens (needs a model that can edit)",
                                      "LLaDA 2.1：改写可见的词（需要能改写的模型）"),
    "remask_sigma": ("ReMDM sigma", "ReMDM 的 sigma"),
    "info_remask_sigma": ("how ReMDM sets the chance a decided token goes back", "ReMDM 如何决定已确认的词被撤回的概率"),
    "choice_sigma_cap": ("min(eta, sigma_max)", "min(eta, sigma_max)"),
    "choice_sigma_rescale": ("eta × sigma_max", "eta × sigma_max"),
    "choice_sigma_conf": ("the less sure a token was, the likelier it goes back", "确认时越没把握，越可能被撤回"),
    "choice_sigma_loop": ("eta, in a loop once the block is mostly visible", "块基本写满后进入循环，每步概率为 eta"),
    "remask_eta": ("ReMDM eta", "ReMDM 的 eta"),
    "info_remask_eta": ("cap on sigma, share of sigma_max, or the loop's sigma", "sigma 的上限、sigma_max 的比例，或循环中的 sigma"),
    "remask_alpha_on": ("ReMDM loop starts at this visible share", "ReMDM 循环开始时的可见比例"),
    "info_remask_alpha_on": ("the loop starts once this share of the block is visible",
                             "块中可见词达到这个比例时开始循环"),
    "remask_loop_steps": ("ReMDM loop steps per block", "ReMDM 每块循环步数"),
    "info_remask_loop_steps": ("extra steps that re-mask and re-confirm; each is a forward pass",
                               "额外的重新掩码、重新确认的步；每步都是一次前向"),
    "verify_threshold": ("WINO verify threshold", "WINO 验证阈值"),
    "info_verify_threshold": ("a decided token whose probability, with itself hidden, is below this goes back",
                              "把自身遮住后概率低于此值的已确认词被撤回"),
    "edit_threshold": ("edit threshold", "改写阈值"),
    "info_edit_threshold": ("rewrite a visible token where another token's probability is above this",
                            "另一个词的概率高于此值时改写可见的词"),
    "max_post_edit_steps": ("edit-only steps per block", "每块仅改写的步数"),
    "info_max_post_edit_steps": ("steps a block may stay open to edit after its last mask",
                                 "块中最后一个掩码确认后，还可继续改写的步数"),
    "penalty_lambda": ("repetition penalty (penalty_lambda)", "重复惩罚（penalty_lambda）"),
    "info_penalty_lambda": ("subtracted from each position's logit of the previous position's token",
                            "从每个位置上“前一位置的词”的 logit 中减去"),
    "threshold_strict": ("strict threshold (> instead of ≥)", "严格阈值（> 而不是 ≥）"),
    "info_threshold_strict": ("how SGLang and WINO compare; read by the threshold schedule only",
                              "SGLang 和 WINO 的比较方式；只有阈值调度读取"),
    "revise_note": (
        "A revision rule lets a step take back what it confirmed. **ReMDM** (`kuleshov-group/remdm`) re-masks "
        "decided tokens at random and confirms as many more; **RCR** (`autonomousvision/mdpo`) re-masks those "
        "decided with the lowest confidence; **WINO** (`Feng-Hong/WINO-DLLM`) drafts, then a verify pass, a "
        "forward of its own that counts in NFE, takes back drafts that fall below its threshold; **LLaDA 2.1's** "
        "token editing (SGLang's `JointThreshold`) rewrites visible tokens whose argmax differs, which needs a model "
        "trained to predict at visible positions. The presets “as shipped” set each rule as its code ships it.",
        "修订规则让一步可以撤回之前确认的词。**ReMDM**（`kuleshov-group/remdm`）随机把已确认的词重新掩码，再多确认同样多个；"
        "**RCR**（`autonomousvision/mdpo`）把确认时置信度最低的词重新掩码；**WINO**（`Feng-Hong/WINO-DLLM`）先起草，"
        "再用一次单独的验证前向（计入 NFE）撤回低于阈值的草稿；**LLaDA 2.1** 的词改写（SGLang 的 `JointThreshold`）"
        "把 argmax 不同的可见词改写掉，这需要在可见位置上也训练过预测的模型。“原版规则”预设按各自代码发布时的设置使用这些规则。",
    ),
    "rv_banner_source": ("{p} follows `{src}`.", "{p} 依照 `{src}`。"),
    "rv_banner_counts": ("Revision rule `{rule}`: {r} tokens taken back to [MASK] and {e} rewritten, in {s} steps "
                         "({n} forward passes; a verify pass counts).",
                         "修订规则 `{rule}`：{r} 个词被撤回为 [MASK]，{e} 个被改写，共 {s} 步（{n} 次前向，验证前向也计入）。"),
    # ----- the presets as shipped -----------------------------------------------------------------
    "preset_llada21": ("LLaDA 2.1 (SGLang) as shipped", "LLaDA 2.1（SGLang）原版规则"),
    "preset_sglang_low_confidence": ("SGLang LowConfidence", "SGLang LowConfidence"),
    "preset_wino": ("WINO as shipped", "WINO 原版规则"),
    "preset_remdm": ("ReMDM as shipped", "ReMDM 原版规则"),
    "preset_rcr": ("RCR as shipped", "RCR 原版规则"),
    "curve_lesson_box": ("The lesson: why parallel decoding breaks, and what taking back does",
                         "这一课：为什么并行解码会出错，撤回又能做什么"),
    # ----- the revision study on the world model (revision_lessons.study_md) -------------------------
    "rt_rule": ("rule", "规则"),
    "rt_decoder": ("decoder", "解码器"),
    "rt_nfe": ("NFE", "NFE"),
    "rt_valid": ("valid runs", "有效运行"),
    "rt_broken": ("broken names", "拆散的名字"),
    "rt_sums": ("wrong sums", "和算错的运行"),
    "rt_revised": ("taken back / rewritten per run", "每次运行撤回 / 改写"),
    "rt_matched": ("monotone at the same NFE: NFE, valid runs", "相同 NFE 的单调解码：NFE，有效运行"),
    "rt_monotone": ("monotone (nothing taken back)", "单调（不撤回）"),
    "rt_editing": ("+ editing (JointThreshold)", "+ 改写（JointThreshold）"),
    "rt_model": ("world model", "世界模型"),
    "rt_oracle": ("oracle", "精确模型"),
    "rt_cannot_edit": ("not measured: this model cannot edit", "未测量：该模型不能改写"),
    "rt_regime_threshold": ("Threshold 0.9 at T = 1", "阈值 0.9，T = 1"),
    "rt_regime_k4": ("Four tokens per step (constant k = 4) at T = 1", "每步 4 个词（恒定 k = 4），T = 1"),
    "rt_footer": ("{model} and its exact oracle (the perfect editor), {n} runs each (prompts × seeds), gen_length {g}; "
                  "95% Wilson intervals.",
                  "{model} 与它的精确模型（完美的改写者），各 {n} 次运行（提示词 × 种子），gen_length {g}；95% Wilson 区间。"),
    # ----- lessons ----------------------------------------------------------------------------
    "mt_final_logprob": ("mean raw log-prob of the final tokens (each at its last decision)",
                         "最终文本中各词的平均原始对数概率（取其最后一次决定时）"),
    "mt_revisions": ("tokens taken back or rewritten per request", "每个请求撤回或改写的词数"),
    # ----- the rules' names -------------------------------------------------------------------
    "rv_rule_rcr": ("RCR", "RCR"),
    "rv_rule_remdm": ("ReMDM", "ReMDM"),
    "rv_rule_wino": ("WINO", "WINO"),
    "rv_rule_joint_threshold": ("token editing", "词改写"),
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
