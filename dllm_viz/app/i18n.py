"""English / 中文 strings for the playground: labels, teaching text, figure titles.

One table, one lookup. Keys are short English identifiers; every key has both languages (a test
checks it), so switching language never shows a raw key.
"""
from __future__ import annotations

LANGS = ("en", "zh")
LANG_CHOICES = (("English", "en"), ("中文", "zh"))

STRINGS: dict[str, tuple[str, str]] = {
    # ----- page ----------------------------------------------------------------------------
    "title": ("dllm-viz · watch a diffusion LM decide what to write first", "dllm-viz · 看扩散语言模型先写哪个词"),
    "subtitle": (
        "A masked-diffusion LM starts from a canvas of masks and confirms a few positions per step, the most "
        "confident first. Confidence comes from the **raw** logits; temperature only changes the tokens drawn "
        "at the confirmed positions. Move a slider: the decode re-runs at once.",
        "掩码扩散语言模型从一整块 [MASK] 画布开始，每一步确认几个位置，最有把握的先确认。置信度来自**原始** logits；"
        "温度只影响被确认位置上抽取的词。拖动滑块，解码会立即重跑。",
    ),
    "language": ("Language", "语言"),
    "model": ("model", "模型"),
    "tab_play": ("Playground", "演练场"),
    "tab_compare": ("Compare", "对比"),
    "tab_sweep": ("Sweep", "参数扫描"),
    "tab_about": ("How to read this", "怎么看"),
    # ----- playground widgets ----------------------------------------------------------------
    "prompt": ("Prompt", "提示词"),
    "presets": ("Presets (article table 4.2)", "预设（文章 4.2 节调参表）"),
    "preset_quality": ("quality", "质量"),
    "preset_balanced": ("balanced", "均衡"),
    "preset_speed": ("speed", "速度"),
    "preset_creative": ("creative", "创意"),
    "preset_llada": ("LLaDA as shipped", "LLaDA 原版规则"),
    "preset_dream": ("Dream as shipped", "Dream 原版规则"),
    "preset_fast_dllm": ("Fast-dLLM as shipped", "Fast-dLLM 原版规则"),
    "gen_length": ("gen length L", "生成长度 L"),
    "temperature": ("temperature", "温度"),
    "top_k": ("initial top_k", "初始 top_k"),
    "decay": ("decay", "衰减"),
    "min_k": ("min_k (floor per step)", "min_k（每步下限）"),
    "steps": ("steps (fixed_steps)", "步数（fixed_steps）"),
    "threshold": ("threshold", "阈值"),
    "block_length": ("block length (0 = one block)", "块长度（0 = 不分块）"),
    "early_stop": ("stop at end of text", "遇到结束符提前结束"),
    "early_stop_threshold": ("end-of-text confidence to stop", "提前结束所需的结束符置信度"),
    "cache": ("key-value cache (Fast-dLLM)", "键值缓存（Fast-dLLM）"),
    "choice_cache_none": ("every step reads the whole canvas (exact)", "每一步都读整块画布（精确）"),
    "choice_cache_prefix": ("reuse the prompt and finished blocks", "复用提示词和已完成的块"),
    "choice_cache_dual": ("reuse everything but the current block", "除当前块外全部复用"),
    "cache_drift": ("measure the drift", "测量偏差"),
    "cache_note": (
        "A cache reuses keys computed at the block's first step: faster, and an approximation, since the canvas "
        "changed since. Cached steps score their block only. 'measure the drift' runs the exact forward beside "
        "(twice the work); the heatmap's drift view shows how far each confidence moved.",
        "缓存复用块的第一步算出的键值：更快，但只是近似，因为画布此后已变。缓存步只给当前块打分。"
        "勾选“测量偏差”会同时跑一次精确前向（计算量翻倍）；热力图的偏差视图显示每个置信度偏了多少。",
    ),
    "schedule": ("schedule", "确认调度"),
    "confidence": ("confidence measure", "置信度度量"),
    "stages_on": ("staged temperature", "分阶段温度"),
    "top_p": ("top_p: keep the smallest set of tokens holding this much probability (1 = off)",
              "top_p：只保留累计概率达到该值的最少词集（1 = 关闭）"),
    "t_early": ("early", "前期"),
    "t_middle": ("middle", "中期"),
    "t_late": ("late", "后期"),
    "seed": ("seed", "随机种子"),
    "new_seed": ("↻ new seed", "↻ 换种子"),
    "run": ("Run", "运行"),
    "schedule_box": ("Schedule", "调度"),
    "sampling_box": ("Sampling", "采样"),
    "teaching": ("Teaching switches (the article's mistakes)", "教学开关（文章里的错误做法）"),
    "confidence_from": ("confidence computed from", "置信度来源"),
    "sample_scope": ("sample at", "采样范围"),
    "rng": ("random numbers", "随机数"),
    "frame": ("step", "步"),
    "play": ("▶ Play", "▶ 播放"),
    "pause": ("⏸ Pause", "⏸ 暂停"),
    "inspector": ("Inspect a position", "查看某个位置"),
    "trace_io": ("Traces in and out", "轨迹导入导出"),
    "download": ("⬇ Download trace JSON", "⬇ 下载轨迹 JSON"),
    "upload": ("⬆ Replay a trace JSON", "⬆ 回放轨迹 JSON"),
    "examples": ("Example traces", "示例轨迹"),
    "preset_custom": ("active: custom settings", "当前：自定义设置"),
    "preset_active": ("active preset: {p}", "当前预设：{p}"),
    "preset_example": ("example trace “{e}”: its own settings ({p})", "示例轨迹「{e}」：沿用它自己的设置（{p}）"),
    "k_sequence": ("k per step: {ks} → {n} steps", "每步 k：{ks} → 共 {n} 步"),
    "k_threshold": ("k per step: set by the model's confidence (threshold)", "每步 k：由模型置信度决定（阈值调度）"),
    "article_what": ("What are “the article” and “table 4.2”?", "“文章”和“表 4.2”指什么？"),
    "article_note": (
        "“The article” is the Chinese technical article this project implements: how to apply temperature "
        "correctly in diffusion-LM inference and how to serve it in SGLang (see the README). Its table 4.2 "
        "lists the tuning presets: temperature, initial top_k as a share of L, and decay, for quality, "
        "balanced, speed and creative decoding.",
        "“文章”指本项目所实现的那篇中文技术文章：如何在扩散语言模型推理中正确使用温度，以及如何在 SGLang 中部署"
        "（见 README）。文章的表 4.2 是调参预设表：质量、均衡、速度、创意四种解码的温度、初始 top_k（占 L 的比例）与衰减。",
    ),
    "banner_diff": (
        "Teaching switch on ({sw}): against the correct run with the same seed, {n} of {g} positions were "
        "confirmed at a different step and {t} hold a different token.",
        "教学开关已打开（{sw}）：与同一种子下的正确做法相比，{g} 个位置中有 {n} 个在不同的步被确认，{t} 个位置的词不同。",
    ),
    "banner_same": (
        "Teaching switch on ({sw}): alone it changes nothing here; the trace equals the correct run's. "
        "The Compare lesson “{lesson}” shows where it matters: [open it]({href}).",
        "教学开关已打开（{sw}）：单独使用时这里没有任何变化，轨迹与正确做法相同。对比页的「{lesson}」一课展示了它在什么情况下起作用：[打开这一课]({href})。",
    ),
    "banner_fixed": (
        "confidence_from = {src} needs sample at = all (the confidence of a sampled token exists only where a "
        "token was sampled), so “sample at” was set to all.",
        "confidence_from = {src} 需要 sample at = all（只有抽过词的位置才有“抽中词的置信度”），所以“采样范围”已设为 all。",
    ),
    "ctl_first": ("back to the start", "回到开头"),
    "ctl_prev": ("one step back (←)", "后退一步（←）"),
    "ctl_next": ("one step forward (→)", "前进一步（→）"),
    "ctl_last": ("to the end", "跳到结尾"),
    "ctl_speed": ("playback speed", "播放速度"),
    "tour_start": ("guided tour", "导览"),
    "tour_next": ("Next", "下一步"),
    "tour_skip": ("Skip", "跳过"),
    "tour_done": ("Done", "完成"),
    "tour_canvas": (
        "The canvas: the prompt and the masks being filled in. Tints show how sure the model was when it "
        "confirmed a token; grey dashed boxes are still masked, with the model's current guess.",
        "画布：提示词和正在被填上的掩码。底色表示模型确认该词时有多大把握；灰色虚线框仍是掩码，里面是模型当前的猜测。",
    ),
    "tour_player": (
        "Play, pause and step through the decode (or use the ← → keys). Every view below follows this step.",
        "播放、暂停或逐步查看解码过程（也可用 ← → 键）。下面的每个图都跟着这一步走。",
    ),
    "tour_heatmap": (
        "Each row is a step, each column a position: the confidence the schedule ranked by. □ marks where a "
        "token was confirmed. Click a cell to jump there.",
        "每行是一步，每列是一个位置：颜色是调度排序所用的置信度。□ 表示在此确认了一个词。点击格子即可跳到那里。",
    ),
    "tour_order": (
        "The unmasking order: the text laid out in rows, coloured by the step that confirmed each token.",
        "去掩码顺序：把文本按行排开，每个词按确认它的那一步着色。",
    ),
    "tour_knobs": (
        "The knobs: presets from the article's table 4.2, temperature and the schedule. Release a slider and the "
        "decode re-runs at once.",
        "调节区：文章表 4.2 的预设、温度和确认调度。松开滑块，解码会立即重跑。",
    ),
    "tour_inspector": (
        "The inspector: the selected position's top candidates, raw and at the temperature slider, and why the "
        "schedule confirmed it (or not yet). Click any token to select it.",
        "位置查看器：所选位置的候选词，原始概率与按温度滑块加温后的概率，以及调度为什么确认（或还没确认）它。点击任意词即可选中。",
    ),
    "help_canvas": (
        "Tint = confidence when the token was confirmed (warm = unsure, cool = sure). Outlined = confirmed at this "
        "step. Dashed grey = still masked; the faint text is the model's current argmax guess. Hover a token to "
        "mark its column in the heatmap; click it to inspect it.",
        "底色 = 该词被确认时的置信度（暖色 = 没把握，冷色 = 有把握）。描边 = 本步确认。灰色虚线框 = 仍是掩码，淡色字是模型"
        "当前的 argmax 猜测。鼠标悬停在词上会在热力图中标出它的列；点击即可查看。",
    ),
    "help_heatmap": (
        "Rows are steps (top = first), columns are positions. Colour = the confidence the schedule ranked by at "
        "that step; empty cells were already confirmed; □ = confirmed at that step. The dark box is the current "
        "step and the selected position; later steps are faded. Click a cell to select that step and position.",
        "行是步（最上面是第一步），列是位置。颜色 = 该步调度排序所用的置信度；空格表示已被确认；□ = 在该步确认。深色框是"
        "当前步和所选位置；之后的步被淡化。点击格子即可选中那一步和那个位置。",
    ),
    "help_order": (
        "The generated text in rows of cells, each coloured by the step that confirmed it and labelled with its "
        "token. Cells not yet confirmed at the current step are faded. Click a cell to jump to its step.",
        "生成的文本按行排成格子，每格按确认它的那一步着色并标出它的词。当前步尚未确认的格子被淡化。点击格子可跳到它被确认的那一步。",
    ),
    "help_steps": (
        "Top: how many positions each step confirmed (k, bars) and the temperature in force (line). Bottom: each "
        "confirmed token's confidence as the schedule saw it (dots) and the raw probability of the token drawn "
        "(crosses). Click to jump to a step.",
        "上：每步确认了多少位置（k，柱）以及当时的温度（线）。下：每个被确认词在调度眼中的置信度（圆点）和实际抽到的词的"
        "原始概率（叉）。点击可跳到某一步。",
    ),
    "help_task_curve": (
        "For a task prompt (the tasks model: copy, reverse, sort, replace, insert, shuffle, Latin square, sudoku): "
        "the share of right answers against tokens confirmed per forward pass, measured over 64 prompts of its "
        "family for the tasks model (solid) and the exact oracle (dashed) at thresholds 0.9 to 0.1. The open "
        "circles sit at the threshold slider's value. Where the oracle falls too, confirming tokens together is "
        "what breaks the answer, not the model; AUP is d3LLM's score of each curve.",
        "对任务提示（任务模型：复制、反转、排序、替换、插入、打乱、拉丁方、数独）：正确答案的比例随每次前向确认词数的变化，"
        "在该任务族的 64 个提示上实测，任务模型为实线，精确模型（知道每个词精确条件分布的完美模型）为虚线，阈值从 0.9 到 0.1。"
        "空心圆标出阈值滑块的位置。若精确模型也随之下降，说明答案出错是因为一起确认了相互依赖的词，而不是模型的问题；"
        "`AUP` 是 `d3LLM` 对每条曲线的评分。",
    ),
    "help_inspector": (
        "The selected position's stored top candidates at the current step: raw shares above, shares at the "
        "temperature slider below (recomputed in the page while you drag). The text says only what was known at "
        "this step.",
        "所选位置在当前步保存下来的候选词：上为原始份额，下为按温度滑块加温后的份额（拖动时在页面内重算）。文字只说明这一步已知的内容。",
    ),
    "mt_steps": ("steps (NFE)", "步数（NFE）"),
    "mt_mean_confidence": ("mean raw confidence of confirmed tokens", "所确认词的平均原始置信度"),
    "mt_early": ("… in the first quarter of the steps", "……其中前四分之一的步"),
    "mt_first_mean": ("mean schedule confidence at step 1 (heatmap's first row)", "第 1 步调度置信度的平均（热力图第一行）"),
    "mt_spread": ("spread (max − min) of the schedule's confidence at step 1", "第 1 步调度置信度的极差（最大 − 最小）"),
    "mt_logprob": ("mean raw log-prob of drawn tokens", "抽取词的平均原始对数概率"),
    "mt_repeat": ("repeated 3-grams", "重复 3-gram 比例"),
    "mt_distinct": ("distinct-2", "distinct-2"),
    "mt_low_p": ("drawn tokens with raw p < {p:g}", "原始 p < {p:g} 的抽取词"),
    "mt_draws": ("tokens drawn per request", "每个请求抽取的词数"),
    "mt_same_trace": ("identical trace (A = B), share of runs", "轨迹完全相同（A = B）的运行比例"),
    "mt_same_step": ("positions confirmed at the same step in A and B", "A 与 B 在同一步确认的位置比例"),
    "mt_solo": ("text equals the same request decoded alone", "与单独解码时文本相同"),
    "mt_seconds": ("seconds per request, each decoded alone", "每个请求单独解码的秒数"),
    "mt_tokens_differ": ("tokens where A and B differ, per run", "每次运行中 A 与 B 不同的词数"),
    "mt_speedup": ("B's time / A's time", "B 的时间 / A 的时间"),
    "mt_footer": ("{n} runs (prompts × seeds), gen_length {g}.", "{n} 次运行（提示词 × 种子），gen_length {g}。"),
    "cmp_steps": ("Steps: A {a}, B {b}.", "步数：A {a}，B {b}。"),
    "ex_quality preset": ("quality preset", "质量预设"),
    "ex_balanced preset": ("balanced preset", "均衡预设"),
    "ex_polluted confidence at T1.5": ("polluted confidence at T1.5", "T=1.5 下被污染的置信度"),
    "ex_staged temperature": ("staged temperature", "分阶段温度"),
    "ex_semi autoregressive blocks": ("semi-autoregressive blocks", "半自回归分块"),
    "choice_raw": ("raw logits (correct)", "原始 logits（正确）"),
    "choice_tempered": ("tempered probabilities (polluted)", "加温后的概率（被污染）"),
    "choice_sampled": ("p(sampled token), needs sample at = all", "p(抽中词)，需要采样范围 = all"),
    "choice_sampled_raw": ("raw p(sampled token), needs sample at = all", "抽中词的原始概率，需要采样范围 = all"),
    "choice_filtered": ("measure on the tempered, filtered distribution", "在加温并过滤后的分布上计算的度量"),
    "choice_selected": ("confirmed positions only (correct)", "只在确认的位置（正确）"),
    "choice_all": ("every masked position (wasted work)", "所有掩码位置（浪费算力）"),
    "choice_per_request": ("one generator per request (correct)", "每请求一个生成器（正确）"),
    "choice_shared": ("one generator for the batch", "整批共用一个生成器"),
    "col_temperature": ("temperature", "温度"),
    "col_top_k": ("initial top_k", "初始 top_k"),
    "col_decay": ("decay", "衰减"),
    "col_runs": ("runs", "运行次数"),
    "legend_tok": ("word", "词"),
    "legend_guess": ("guess", "猜测"),
    "legend_prompt_sample": ("Abc", "文字"),
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
    # ----- compare ----------------------------------------------------------------------------
    "lessons": ("One-click lessons", "一键对比"),
    "compare_note": (
        "Both sides decode the Playground's prompt with its seed and gen length, in one batch. Positions whose "
        "final token differs are underlined in red.",
        "两边都用演练场的提示词、随机种子和生成长度，在同一批里解码。最终词不同的位置用红色波浪线标出。",
    ),
    "config_a": ("Config A (JSON: DecodeConfig fields over the balanced preset)", "配置 A（JSON：覆盖均衡预设的 DecodeConfig 字段）"),
    "config_b": ("Config B", "配置 B"),
    "compare_run": ("Compare", "对比"),
    "side_a": ("A", "A"),
    "side_b": ("B", "B"),
    "look_for": ("What to look for", "看什么"),
    "measured": ("What we measured on the embedded model", "在内置模型上实测"),
    "diverge_none": ("The two runs confirmed the same positions at every step.", "两次运行每一步确认的位置完全相同。"),
    "diverge_at": (
        "The orders agree for {a} step(s) and diverge at step {s}; {n} of {g} positions were confirmed at a "
        "different step, and {t} positions hold a different token.",
        "两种顺序前 {a} 步一致，在第 {s} 步分叉；{g} 个位置中有 {n} 个在不同的步被确认，{t} 个位置的词不同。",
    ),
    "batch_note": (
        "Decoded in one batch with {n} neighbour prompt(s). Same text as when decoded alone: A {a}, B {b}.",
        "与 {n} 个邻居提示词同批解码。与单独解码时文本相同吗：A {a}，B {b}。",
    ),
    "neighbours": ("neighbour prompts in the same batch", "同批的邻居提示词数"),
    "yes": ("yes", "是"),
    "no": ("no", "否"),
    # ----- sweep ------------------------------------------------------------------------------
    "sweep_intro": (
        "Regenerate the article's tuning table from measurement: every cell is decoded for every seed and "
        "prompt, all in **one batched decode**. Numbers are means over seeds and prompts.",
        "用实测重建文章的调参表：每个格子对每个种子和提示词都解码一次，全部放在**一次批量解码**里。数值为各种子与提示词的平均。",
    ),
    "sweep_temps": ("temperatures", "温度"),
    "sweep_topk": ("initial top_k = L / d", "初始 top_k = L / d"),
    "sweep_decays": ("decays", "衰减"),
    "sweep_seeds": ("seeds per cell", "每格种子数"),
    "sweep_prompts": ("prompts (one per line)", "提示词（每行一个）"),
    "sweep_run": ("Run sweep", "开始扫描"),
    "sweep_table": ("All cells", "所有格子"),
    "sweep_done": ("{n} requests in one batched decode, {s:.1f} s.", "{n} 个请求，一次批量解码，耗时 {s:.1f} 秒。"),
    "m_nfe": ("steps / NFE", "步数 / NFE"),
    "m_repeat_3": ("repeated 3-gram share", "重复 3-gram 比例"),
    "m_distinct_2": ("distinct-2", "distinct-2"),
    "m_mean_logprob": ("mean log-prob of drawn tokens", "抽取词平均对数概率"),
    # ----- about ------------------------------------------------------------------------------
    "about_md": (
        """### The decoding loop
A masked-diffusion LM fills a canvas `prompt + [MASK] × L`. Every **step** runs one forward pass over the whole
canvas and predicts a distribution at each masked position. Then:

1. **Confidence** comes from the *raw* logits: `p = softmax(logits)`, confidence = `max p` (or margin / entropy).
2. The **schedule** picks which positions to confirm: top-k with decay (`topk_decay`: `k ← ⌊k · decay⌋`, never
   below `min_k`), a fixed number of steps (`fixed_steps`), a confidence threshold (`threshold`), adaptive
   (`adaptive`), or Dream's linear time (`linear_time`: each step confirms the share of the masks left that a linear
   noise schedule unmasks between two times).
3. Only at those positions a token is **drawn** from `softmax(logits / T)`; `T = 0` means argmax.
4. Confirmed tokens never change. The run ends when no mask is left; NFE = number of forward passes.

### Reading the playground
- **Canvas**: the text after the chosen step. Tints = confidence when the token was confirmed (warm = unsure,
  cool = sure); outlined = confirmed at this step; dashed grey = still masked, with the model's current argmax guess.
  Click a token to inspect it.
- **Heatmap**: rows are steps, columns positions; colour = the confidence the schedule ranked by; □ = confirmed there.
- **Unmasking order**: the span laid out in rows, each cell coloured by the step it was confirmed at.
- **Per step**: how many positions each step confirmed (k) and the temperature in force; below, each confirmed
  token's confidence as the schedule saw it (dots) and the raw probability of the token actually drawn (crosses).
- **Inspector**: the stored top candidates of a position; raw probabilities next to the tempered ones for the
  temperature slider, computed from the stored numbers without calling the model.

### The article's advice
Balanced: `T ≈ 1.0`, `k₀ = L/4`, decay 0.9. Repetition → lower `k₀` (L/6) and keep `T ≥ 0.6`; incoherence → lower T
or raise k. Tune the schedule first, then temperature. The **Compare** tab shows each mistake next to the correct
version, with what we measured on the embedded model; the **Sweep** tab rebuilds the tuning table from measurement.
""",
        """### 解码循环
掩码扩散语言模型要填满画布 `提示词 + [MASK] × L`。每一**步**对整块画布做一次前向，在每个掩码位置预测一个分布。然后：

1. **置信度**来自*原始* logits：`p = softmax(logits)`，置信度 = `max p`（或 margin / 熵）。
2. **调度**决定确认哪些位置：带衰减的 top-k（`topk_decay`：`k ← ⌊k · decay⌋`，不低于 `min_k`）、固定步数（`fixed_steps`）、
   置信度阈值（`threshold`）、自适应（`adaptive`），或 Dream 的线性时间（`linear_time`：每步确认剩余掩码中、线性噪声调度在两个时刻之间
   去掉的那一份）。
3. 只在这些位置从 `softmax(logits / T)` **抽取**词；`T = 0` 即 argmax。
4. 已确认的词不再改变。没有掩码时结束；NFE = 前向次数。

### 怎么看演练场
- **画布**：所选步之后的文本。底色 = 该词被确认时的置信度（暖色 = 没把握，冷色 = 有把握）；描边 = 本步确认；
  灰色虚线框 = 仍是掩码，淡色字是模型当前的 argmax 猜测。点击一个词即可查看它。
- **热力图**：行是步，列是位置；颜色 = 调度排序所用的置信度；□ = 在此确认。
- **去掩码顺序**：把生成段按行排开，每格按其被确认的步着色。
- **每步图**：每步确认了多少位置（k）以及当时的温度；下方是每个被确认词在调度眼中的置信度（圆点）和实际抽到的词的原始概率（叉）。
- **查看位置**：某个位置保存下来的候选词；原始概率旁边是按温度滑块加温后的概率，直接由保存的数字算出，不调用模型。

### 文章的建议
均衡：`T ≈ 1.0`，`k₀ = L/4`，衰减 0.9。出现重复 → 降低 `k₀`（L/6）并保持 `T ≥ 0.6`；语句不通 → 降低 T 或增大 k。
先调调度，再调温度。**对比**页把每个错误做法与正确做法并排展示，并附上在内置模型上的实测；**参数扫描**页用实测重建调参表。
""",
    ),
    # ----- errors -----------------------------------------------------------------------------
    "err_trace": ("trace file: {e}", "轨迹文件：{e}"),
    "err_empty_grid": ("sweep: choose at least one value for {v}", "扫描：{v} 至少选一个值"),
}


def t(key: str, lang: str = "en", **values: object) -> str:
    """The string `key` in `lang` ("en" | "zh"), formatted with `values`."""
    if lang not in LANGS:
        raise ValueError(f"lang={lang!r} is invalid: expected one of {' | '.join(LANGS)}")
    text = STRINGS[key][LANGS.index(lang)]
    return text.format(**values) if values else text


def example_label(name: str, lang: str) -> str:
    """An example trace's name in `lang` (names without a translation are shown as they are)."""
    try:
        return t(f"ex_{name}", lang)
    except KeyError:
        return name
