"""English / 中文 strings of the page and the playground's widgets (labels, choices, help notes): key -> (en, zh). Merged by `i18n`."""
from __future__ import annotations

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
    "pause": ("❚❚ Pause", "❚❚ 暂停"),
    "inspector": ("Inspect a position", "查看某个位置"),
    "trace_io": ("Traces in and out", "轨迹导入导出"),
    "download": ("⬇ Download trace JSON", "⬇ 下载轨迹 JSON"),
    "upload": ("⬆ Replay a trace JSON", "⬆ 回放轨迹 JSON"),
    "examples": ("Example traces", "示例轨迹"),
    "preset_custom": ("active: custom settings", "当前：自定义设置"),
    "preset_active": ("active preset: {p}", "当前预设：{p}"),
    "preset_example": ("example “{e}”, its own settings ({p})", "示例「{e}」，沿用它自己的设置（{p}）"),
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
    # ----- issue 29: prompt, links, a live decode, banners --------------------
    "prompt_info": ("Enter runs · Shift+Enter: new line", "回车运行 · Shift+回车换行"),
    "try_prompt": ("Try one (a click runs it):", "试一个（点击即运行）："),
    "banner_stopped": ("Stopped. The run on show is the last one that finished, with its settings.", "已停止。显示的是上一次完成的运行及其设置。"),
    "banner_unchanged": ("Same run as before: {what}, yet every step confirmed the same positions with the same tokens.", "与之前完全相同的运行：虽然改了 {what}，每一步确认的位置和词都没有变。"),
    "banner_unchanged_threshold": ("Same run as before: no step had a confidence between the old threshold {a} and the new {b}, so every step confirmed the same positions.", "与之前完全相同的运行：没有任何一步的置信度落在旧阈值 {a} 与新阈值 {b} 之间，所以每一步确认的位置都没变。"),
    "tour_button": ("tour", "导览"),
    "ex_world quality preset": ("world model, quality preset", "世界模型，质量预设"),
    "stop": ("Stop", "停止"),
    "copy_link": ("copy a link that reopens this view", "复制可重新打开此视图的链接"),
    "link": ("link", "链接"),
    "link_copied": ("copied: the address bar holds it too", "已复制：地址栏里也是这个链接"),
}
