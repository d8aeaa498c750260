"""English / 中文 strings of the Compare, Sweep and About tabs, and error messages: key -> (en, zh). Merged by `i18n`."""
from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
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
    "measured": ("What we measured on `{model}`", "在 `{model}` 上实测"),
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
    # ----- issue 29: the world model's correctness table --------------------
    "wt_variant": ("variant", "变体"),
    "wt_steps": ("steps", "步数"),
    "wt_valid_runs": ("valid runs", "全部正确的运行"),
    "wt_valid_sentences": ("valid sentences", "正确的句子"),
    "wt_broken": ("broken two-word names", "被拆坏的双词名字"),
    "wt_breaking": ("runs breaking {rules}", "违反{rules}规则的运行"),
    "wt_claim": ("Claim: {c}.", "论断：{c}。"),
    "wt_pair_claim": ("A vs B as in the Compare tab, scored by the world checker", "按对比页的 A 与 B，由世界语言检查器评分"),
}
