"""English / 中文 strings of the views: canvas, figures, inspector, run facts: key -> (en, zh). Merged by `i18n`."""
from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    # ----- canvas -----------------------------------------------------------------------------
    "step_of": ("step {f} of {n}", "第 {f} / {n} 步"),
    "start": ("start: every position masked", "开始：所有位置都是掩码"),
    "after_step": ("after step {s}: {k} confirmed ({new} highlighted)", "第 {s} 步后：确认了 {k} 个（{new} 个高亮）"),
    "finished": ("finished", "完成"),
    "legend_conf": ("confidence when confirmed", "确认时的置信度"),
    "legend_low": ("low", "低"),
    "legend_high": ("high", "高"),
    "legend_new": ("confirmed at this step", "本步确认"),
    "legend_mask": ("still masked; faint text = current argmax guess", "仍是掩码；淡色字 = 当前 argmax 猜测"),
    "legend_prompt": ("prompt", "提示词"),
    "legend_pad": ("end padding (after the first end-of-text; not part of the text)",
                   "结束填充（第一个结束符之后；不属于文本）"),
    "tip_confirmed": ("position {p} · confirmed at step {s}\nconfidence {c}\nraw p(token) {q}",
                      "位置 {p} · 第 {s} 步确认\n置信度 {c}\n原始 p(词) {q}"),
    "tip_masked": ("position {p} · masked\nargmax guess {g} (confidence {c})",
                   "位置 {p} · 掩码\nargmax 猜测 {g}（置信度 {c}）"),
    # ----- figures ----------------------------------------------------------------------------
    "fig_heatmap": ("Confidence per step and position (□ = confirmed there)", "每步每个位置的置信度（□ = 在此确认）"),
    "fig_heatmap_polluted": ("Confidence the schedule ranked by: {src} (□ = confirmed)",
                             "调度所用的置信度：{src}（□ = 在此确认）"),
    "fig_order": ("Unmasking order (colour = step confirmed)", "去掩码顺序（颜色 = 确认的步）"),
    "fig_steps": ("Per step: k, temperature, confidence", "每步：k、温度、置信度"),
    "fig_task_curve": ("Right answers vs tokens per forward, threshold knob", "正确答案 vs 每次前向的词数（阈值）"),
    "task_curve_none": ("A task prompt of the tasks model shows its family's measured curves here.",
                        "任务模型的任务提示会在这里显示该任务族实测的曲线。"),
    "task_model": ("tasks model", "任务模型"),
    "task_oracle": ("exact oracle", "精确模型"),
    "axis_tpf": ("tokens per forward", "每次前向确认的词数"),
    "axis_right": ("right answers %", "正确答案 %"),
    "insp_title": ("Top candidates at position {p}, step {s}", "位置 {p}、第 {s} 步的候选词"),
    "fig_compare": ("Where the two orders diverge", "两种顺序在哪里分叉"),
    "axis_step": ("step", "步"),
    "axis_position": ("position", "位置"),
    "axis_k": ("k (confirmed)", "k（确认数）"),
    "axis_temperature": ("temperature", "温度"),
    "axis_confidence": ("confidence", "置信度"),
    "axis_drift": ("|Δ confidence|", "|Δ 置信度|"),
    "heat_confidence": ("confidence", "置信度"),
    "heat_drift": ("cache drift", "缓存偏差"),
    "tip_drift": ("cached {c} · exact {e}", "缓存 {c} · 精确 {e}"),
    "raw": ("raw", "原始"),
    "tempered": ("tempered, T={t}", "加温后，T={t}"),
    "schedule_conf": ("schedule's confidence", "调度置信度"),
    "raw_token_p": ("raw p(drawn token)", "原始 p(抽到的词)"),
    "mean": ("mean", "平均"),
    "confirmed_marker": ("confirmed", "确认"),
    # ----- inspector --------------------------------------------------------------------------
    "insp_confirmed": (
        "**Confirmed at step {s}**: rank {r} of {m} masked positions in block {b} by {measure} = {c}; "
        "the schedule confirmed k = {k} this step{why}. Drew **{tok}** (raw p = {q}); the argmax was **{g}**.",
        "**第 {s} 步确认**：在第 {b} 块的 {m} 个掩码位置中按 {measure} = {c} 排第 {r}；"
        "本步调度确认 k = {k} 个{why}。抽到 **{tok}**（原始 p = {q}）；argmax 是 **{g}**。",
    ),
    "insp_waiting": (
        "**Still masked after step {f}**: in the next forward pass (step {s}) it ranks {r} of {m} masked positions "
        "in block {b} by {measure} = {c}. It is confirmed at a later step; which token it gets is not known yet.",
        "**第 {f} 步后仍是掩码**：在下一次前向（第 {s} 步）中，它在第 {b} 块的 {m} 个掩码位置里按 {measure} = {c} "
        "排第 {r}。它会在之后的某一步被确认；会得到哪个词现在还不知道。",
    ),
    "insp_other_block": (
        "**Waiting for its block**: position {p} is in block {pb}; step {s} decodes block {b}.",
        "**等待所在块**：位置 {p} 在第 {pb} 块；第 {s} 步在解码第 {b} 块。",
    ),
    "insp_before": ("Confirmed earlier, at step {s}; showing the candidates of that step.",
                    "更早已在第 {s} 步确认；下面是那一步的候选。"),
    "insp_threshold_above": (" (confidence ≥ threshold {t})", "（置信度 ≥ 阈值 {t}）"),
    "insp_floor": (" (filled up to the min_k floor)", "（由 min_k 下限补足）"),
    "insp_tempered_note": (
        "Bars: each candidate's share among the stored top {n}, which hold {m:.0%} of the raw probability; "
        "raw (T = 1) above, at the temperature slider below (p^(1/T) renormalised: exact shares, no model call).",
        "柱：每个候选在保存的前 {n} 个候选中所占的份额，这 {n} 个候选共占原始概率的 {m:.0%}；上为原始（T = 1），"
        "下为温度滑块下的份额（p^(1/T) 重新归一化：份额精确，不调用模型）。",
    ),
    "insp_note_raw": ("This run's schedule ranks by raw confidence: it never sees the tempered numbers.",
                      "本次运行的调度按原始置信度排序：它从不看加温后的数字。"),
    "insp_note_polluted": ("This run's schedule ranks by {src} confidence (a teaching switch): here it does see "
                           "tempered numbers, which is the article's mistake.",
                           "本次运行的调度按 {src} 置信度排序（教学开关）：这里它确实看到了加温后的数字，这正是文章指出的错误。"),
    "insp_no_candidates": ("This trace was recorded without candidates.", "这条轨迹没有记录候选词。"),
    # ----- facts ------------------------------------------------------------------------------
    "f_steps": ("steps = forward passes (NFE)", "步数 = 前向次数（NFE）"),
    "f_wall": ("wall time", "耗时"),
    "f_tps": ("tokens / s", "词 / 秒"),
    "f_tokens_per_step": ("tokens / step", "词 / 步"),
    "f_conf": ("mean confidence (confirmed)", "平均置信度（确认时）"),
    "f_logprob": ("mean log-prob of drawn tokens", "抽取词的平均对数概率"),
    "f_repeat": ("repeated 3-grams", "重复 3-gram 比例"),
    "f_distinct1": ("distinct-1", "distinct-1"),
    "f_distinct2": ("distinct-2", "distinct-2"),
    "f_nfe_saved": ("NFE saved by the early stop", "提前结束节省的 NFE"),
    "f_computed": ("positions computed, of full forwards'", "实际计算的位置数 / 全量前向"),
    "f_cache_saved": ("forward time saved (vs this run's full forwards)", "节省的前向时间（对比本次的全量前向）"),
    "f_drift": ("largest cache drift of a confidence", "置信度的最大缓存偏差"),
    "f_drift_steps": ("cached steps the exact forward would change", "精确前向会改变的缓存步"),
    "f_valid": ("valid sentences", "有效句子"),
    "f_answer": ("answer (task checker)", "答案（任务检查器）"),
}
