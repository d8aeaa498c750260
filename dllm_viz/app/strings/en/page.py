"""The page's strings in English, one topic of `strings.en`: the page, the playground's widgets, the views, the
Compare, Sweep and About tabs, and the user errors."""
from __future__ import annotations

STRINGS: dict[str, str] = {
    # ===== the page and the playground's widgets (labels, choices, help notes) =====================================
    # ----- page ----------------------------------------------------------------------------
    "title": "dllm-viz · watch a diffusion LM decide what to write first",
    "subtitle": ("A masked-diffusion LM starts from a canvas of masks and confirms a few positions per step, the "
        "most confident first. Confidence comes from the **raw** logits; temperature only changes the tokens drawn "
        "at the confirmed positions. Move a slider: the decode re-runs at once."),
    "language": "Language", "model": "model",
    "tab_play": "Playground", "tab_compare": "Compare", "tab_sweep": "Sweep", "tab_about": "How to read this",
    # ----- playground widgets ----------------------------------------------------------------
    "prompt": "Prompt", "presets": "Presets (article table 4.2)", "presets_canvas": "Presets (as shipped)",
    "preset_quality": "quality", "preset_balanced": "balanced", "preset_speed": "speed", "preset_creative": "creative",
    "preset_llada": "LLaDA as shipped", "preset_dream": "Dream as shipped", "preset_fast_dllm": "Fast-dLLM as shipped",
    "gen_length": "gen length L", "temperature": "temperature", "top_k": "initial top_k", "decay": "decay",
    "min_k": "min_k (floor per step)", "steps": "steps (fixed_steps)",
    "threshold": "threshold", "block_length": "block length (0 = one block)",
    "early_stop": "stop at end of text", "early_stop_threshold": "end-of-text confidence to stop",
    "cache": "key-value cache (Fast-dLLM)", "choice_cache_none": "exact, each step reads all",
    "choice_cache_prefix": "reuse prompt, done blocks", "choice_cache_dual": "reuse all but this block", "cache_drift": "measure the drift",
    "cache_note": ("A cache reuses keys computed at the block's first step: faster, and an approximation, since the "
        "canvas changed since. Cached steps score their block only. 'measure the drift' runs the exact forward "
        "beside (twice the work); the heatmap's drift view shows how far each confidence moved."),
    "schedule": "schedule", "confidence": "confidence measure", "stages_on": "staged temperature",
    "top_p": "top_p: keep the smallest set of tokens holding this much probability (1 = off)",
    "t_early": "early", "t_middle": "middle", "t_late": "late", "seed": "seed", "new_seed": "↻ new seed",
    "run": "Run", "schedule_box": "Schedule", "sampling_box": "Sampling", "teaching": "Teaching switches (the article's mistakes)",
    "confidence_from": "confidence computed from", "sample_scope": "sample at",
    "rng": "random numbers", "frame": "step", "play": "▶ Play", "pause": "❚❚ Pause",
    "inspector": "Inspect a position", "trace_io": "Traces in and out",
    "download": "⬇ Download trace JSON", "upload": "⬆ Replay a trace JSON", "examples": "Example traces", "anim_format": "Animation format", "anim_make": "⬇ Download animation of the trace on show", "anim_file": "Animation file (click to save)", "diff_upload": "⇄ Diff a trace JSON against the trace on show",
    "preset_custom": "active: custom settings", "preset_active": "active preset: {p}",
    "preset_example": "example “{e}”, its own settings ({p})", "k_sequence": "k per step: {ks} → {n} steps",
    "k_threshold": "k per step: set by what the model predicts (schedule {schedule})",
    "article_what": "What are “the article” and “table 4.2”?",
    "article_note": ("“The article” is the Chinese technical article this project implements: how to apply "
        "temperature correctly in diffusion-LM inference and how to serve it in SGLang (see the README). Its table "
        "4.2 lists the tuning presets: temperature, initial top_k as a share of L, and decay, for quality, balanced, "
        "speed and creative decoding."),
    "banner_diff": ("Teaching switch on ({sw}): against the correct run with the same seed, {n} of {g} positions "
        "were confirmed at a different step and {t} hold a different token."),
    "banner_same": ("Teaching switch on ({sw}): alone it changes nothing here; the trace equals the correct run's. "
        "The Compare lesson “{lesson}” shows where it matters: [open it]({href})."),
    "banner_fixed": ("confidence_from = {src} needs sample at = all (the confidence of a sampled token exists only "
        "where a token was sampled), so “sample at” was set to all."),
    "ctl_first": "back to the start", "ctl_prev": "one step back (←)", "ctl_next": "one step forward (→)",
    "ctl_last": "to the end", "ctl_speed": "playback speed",
    "tour_start": "guided tour", "tour_next": "Next", "tour_skip": "Skip", "tour_done": "Done",
    "tour_canvas": "The canvas: the prompt and the masks being filled in. Tints show how sure the model was when it confirmed a token; grey dashed boxes are still masked, with the model's current guess.",
    "tour_player": "Play, pause and step through the decode (or use the ← → keys). Every view below follows this step.",
    "tour_heatmap": "Each row is a step, each column a position: the confidence the schedule ranked by. □ marks where a token was confirmed. Click a cell to jump there.",
    "tour_order": "The unmasking order: the text laid out in rows, coloured by the step that confirmed each token.",
    "tour_knobs": "The knobs: presets from the article's table 4.2, temperature and the schedule. Release a slider and the decode re-runs at once.",
    "tour_inspector": "The inspector: the selected position's top candidates, raw and at the temperature slider, and why the schedule confirmed it (or not yet). Click any token to select it.",
    "tour_rn_canvas": "The canvas: the prompt, then a canvas that is never masked. It starts as random tokens; each step proposes a token everywhere, accepts the lowest-entropy proposals within the entropy bound and renoises the rest. Dashed grey: noise; outlined: an accepted proposal, which a later step may still renoise.",
    "tour_rn_heatmap": "Each row is a step, each column a position: purple, its proposal was accepted; grey, it was renoised (red: it lost an accepted token). • a change, □ the last one. Click a cell to jump there.",
    "tour_rn_order": "The stability map: the final text in rows, each token coloured by the step it last changed at, with how many times it changed.",
    "tour_rn_steps": "Per step: the positions accepted and the temperature (t_max down to t_min over a canvas); below, the accepted entropy against the bound and the mean entropy against the stop's threshold.",
    "tour_rn_knobs": "The knobs: the presets as DiffusionGemma and SGLang ship them, and the gen length; the box below holds the entropy bound, the temperatures and the stop rule. Release a slider and the decode re-runs.",
    "help_canvas": "Tint = confidence when the token was confirmed (warm = unsure, cool = sure). Outlined = confirmed at this step. Dashed grey = still masked; the faint text is the model's current argmax guess. Hover a token to mark its column in the heatmap; click it to inspect it. On a renoising model (world-renoise) nothing is masked: dashed grey is noise (random tokens), outlined is an accepted proposal, which a later step may still renoise.",
    "help_heatmap": "Rows are steps (top = first), columns are positions. Colour = the confidence the schedule ranked by at that step; empty cells were already confirmed; □ = confirmed at that step. The dark box is the current step and the selected position; later steps are faded. Click a cell to select that step and position.",
    "help_order": ("The generated text in rows of cells, each coloured by the step that confirmed it and labelled "
        "with its token. Cells not yet confirmed at the current step are faded. Click a cell to jump to its step."),
    "help_steps": ("Top: how many positions each step confirmed (k, bars) and the temperature in force (line). "
        "Bottom: each confirmed token's confidence as the schedule saw it (dots) and the raw probability of the "
        "token drawn (crosses). Click to jump to a step."),
    "help_task_curve": ("For a task prompt (the tasks model: copy, reverse, sort, replace, insert, shuffle, Latin "
        "square, sudoku): the share of right answers against tokens confirmed per forward pass, measured over 64 "
        "prompts of its family for the tasks model (solid) and the exact oracle (dashed) at thresholds 0.9 to 0.1. "
        "The open circles sit at the threshold slider's value. Where the oracle falls too, confirming tokens "
        "together is what breaks the answer, not the model; AUP is d3LLM's score of each curve."),
    "help_inspector": ("The selected position's stored top candidates at the current step: raw shares above, shares "
        "at the temperature slider below (recomputed in the page while you drag). The text says only what was known "
        "at this step."),
    "mt_steps": "steps (NFE)", "mt_mean_confidence": "mean raw confidence of confirmed tokens",
    "mt_early": "… in the first quarter of the steps", "mt_first_mean": "mean schedule confidence at step 1 (heatmap's first row)",
    "mt_spread": "spread (max − min) of the schedule's confidence at step 1",
    "mt_logprob": "mean raw log-prob of drawn tokens", "mt_repeat": "repeated 3-grams", "mt_distinct": "distinct-2",
    "mt_low_p": "drawn tokens with raw p < {p:g}", "mt_draws": "tokens drawn per request",
    "mt_same_trace": "identical trace (A = B), share of runs", "mt_same_step": "positions confirmed at the same step in A and B",
    "mt_solo": "text equals the same request decoded alone", "mt_seconds": "seconds per request, each decoded alone",
    "mt_tokens_differ": "tokens where A and B differ, per run", "mt_speedup": "B's time / A's time",
    "mt_footer": "{n} runs (prompts × seeds), gen_length {g}.", "cmp_steps": "Steps: A {a}, B {b}.",
    "ex_quality preset": "quality preset", "ex_balanced preset": "balanced preset",
    "ex_polluted confidence at T1.5": "polluted confidence at T1.5", "ex_staged temperature": "staged temperature",
    "ex_semi autoregressive blocks": "semi-autoregressive blocks",
    "choice_raw": "raw logits (correct)", "choice_tempered": "tempered probabilities (polluted)",
    "choice_sampled": "p(sampled token), needs sample at = all", "choice_sampled_raw": "raw p(sampled token), needs sample at = all",
    "choice_filtered": "measure on the tempered, filtered distribution",
    "choice_selected": "confirmed positions only (correct)", "choice_all": "every masked position (wasted work)",
    "choice_per_request": "one generator per request (correct)", "choice_shared": "one generator for the batch",
    "col_temperature": "temperature", "col_top_k": "initial top_k", "col_decay": "decay", "col_runs": "runs",
    "legend_tok": "word", "legend_guess": "guess", "legend_prompt_sample": "Abc",
    # ----- prompt, links, a live decode, banners --------------------
    "prompt_info": "Enter runs · Shift+Enter: new line", "try_prompt": "Try one (a click runs it):",
    "banner_forked": ("**Forked** after step {s}: {what}; the decode went on from that canvas. {n} of {g} positions end "
        "with another token than in the trace it forked from: [see them side by side]({href}) (Download saves the "
        "fork, its fork point included)."),
    "fork_pair_text": ("### A fork beside the trace it left\n\nA is the trace on show before the fork, B the fork ({what}): "
        "one player moves both, and the figures show where their confirmations part. The boxes hold their "
        "settings: Compare decodes those again, without the fork's change."),
    "banner_fork_force": "{tok} placed at position {pos}", "banner_fork_remask": "position {pos} taken back to [MASK]",
    "banner_stopped": "Stopped. The run on show is the last one that finished, with its settings.",
    "banner_unchanged": "Same run as before: {what}, yet every step confirmed the same positions with the same tokens.",
    "banner_unchanged_threshold": ("Same run as before: no step had a confidence between the old threshold {a} and "
        "the new {b}, so every step confirmed the same positions."),
    "tour_button": "tour", "ex_world quality preset": "world model, quality preset",
    "stop": "Stop", "copy_link": "copy a link that reopens this view",
    "link": "link", "link_copied": "copied: the address bar holds it too",
    # ===== the views: canvas, figures, inspector, run facts ========================================================
    # ----- canvas -----------------------------------------------------------------------------
    "step_of": "step {f} of {n}", "start": "start: every position masked",
    "after_step": "after step {s}: {k} confirmed ({new} highlighted)", "finished": "finished",
    "rn_start": "start: the first canvas is random tokens (noise)", "rn_after_step": "after step {s}: {k} accepted ({new} newly, highlighted)",
    "rn_insp_title": "Position {p} after {s} steps", "rn_insp_note": "A renoising trace keeps no candidates: each step's proposal, its entropy and whether the entropy bound accepted it.",
    "legend_conf": "confidence when confirmed", "legend_low": "low", "legend_high": "high", "legend_new": "confirmed at this step",
    "legend_mask": "still masked; faint text = current argmax guess", "legend_prompt": "prompt",
    "legend_pad": "end padding (after the first end-of-text; not part of the text)",
    "tip_confirmed": "position {p} · confirmed at step {s}\nconfidence {c}\nraw p(token) {q}",
    "tip_masked": "position {p} · masked\nargmax guess {g} (confidence {c})",
    # ----- figures ----------------------------------------------------------------------------
    "fig_heatmap": "Confidence per step and position\n(□ = confirmed there)",
    "fig_heatmap_polluted": "Confidence the schedule ranked by: {src}\n(□ = confirmed there)",
    "fig_order": "Unmasking order (colour = step confirmed)", "fig_steps": "Per step: k, temperature, confidence",
    "aup_refused": "refused (d3LLM: ends > 5 points below its start)",
    "fig_task_curve": "Right answers vs tokens per forward, threshold knob",
    "task_curve_none": "A task prompt of the tasks model shows its family's measured curves here.",
    "task_model": "tasks model", "task_oracle": "exact oracle", "axis_tpf": "tokens per forward", "axis_right": "right answers %",
    "insp_title": "Top candidates at position {p}, step {s}", "fig_compare": "Where the two orders diverge",
    "axis_step": "step", "axis_position": "position", "axis_k": "k (confirmed)", "axis_temperature": "temperature",
    "axis_confidence": "confidence", "axis_drift": "|Δ confidence|",
    "heat_confidence": "confidence", "heat_drift": "cache drift", "tip_drift": "cached {c} · exact {e}", "raw": "raw",
    "tempered": "tempered, T={t}", "schedule_conf": "schedule's confidence",
    "raw_token_p": "raw p(drawn token)", "mean": "mean", "confirmed_marker": "confirmed",
    # ----- inspector --------------------------------------------------------------------------
    "insp_confirmed": ("**Confirmed at step {s}**: rank {r} of {m} masked positions in block {b} by {measure} = {c}; "
        "the schedule confirmed k = {k} this step{why}. Drew **{tok}** (raw p = {q}); the argmax was **{g}**."),
    "insp_waiting": ("**Still masked after step {f}**: in the next forward pass (step {s}) it ranks {r} of {m} "
        "masked positions in block {b} by {measure} = {c}. It is confirmed at a later step; which token it gets is "
        "not known yet."),
    "insp_other_block": "**Waiting for its block**: position {p} is in block {pb}; step {s} decodes block {b}.",
    "insp_before": "Confirmed earlier, at step {s}; showing the candidates of that step.",
    "insp_threshold_above": " (confidence ≥ threshold {t})", "insp_floor": " (filled up to the min_k floor)",
    "insp_tempered_note": ("Bars: each candidate's share among the stored top {n}, which hold {m} of the raw "
        "probability; raw (T = 1) above, at the temperature slider below (p^(1/T) renormalised: exact shares, no "
        "model call)."),
    "insp_note_raw": "This run's schedule ranks by raw confidence: it never sees the tempered numbers.",
    "insp_note_polluted": ("This run's schedule ranks by {src} confidence (a teaching switch): here it does see "
        "tempered numbers, which is the article's mistake."),
    "insp_no_candidates": "This trace was recorded without candidates.",
    # ----- facts ------------------------------------------------------------------------------
    "f_steps": "steps = forward passes (NFE)", "f_wall": "wall time", "f_tps": "tokens / s",
    "f_tokens_per_step": "tokens / step", "f_conf": "mean confidence (confirmed)",
    "f_logprob": "mean log-prob of drawn tokens", "f_repeat": "repeated 3-grams", "f_distinct1": "distinct-1",
    "f_distinct2": "distinct-2", "f_nfe_saved": "NFE saved by the early stop",
    "f_computed": "positions computed / by a full forward at every step",
    "f_cache_time": "forward time / if every step were a full forward (estimate)",
    "f_nfe": "forward passes (NFE) as the engine counts them", "f_verify_shadow": "forwards carrying WINO's "
        "shadow block (the verify in the step's forward)", "f_verify_canvases": "canvases the verify computed "
        "(ours: one per decided position)", "f_verify_canvases_fallback": "canvases the verify computed (this model "
        "takes no shadow block)",
    "f_drift": "largest cache drift of a confidence", "f_drift_steps": "cached steps the exact forward would change",
    "f_valid": "valid sentences (of the finished ones)", "f_answer": "answer (task checker)",
    # ----- checker, live canvas, notes --------------------
    "legend_bad": "the world checker rejects it (hover: which rule)",
    "legend_diff": "differs from the other side's token at the step on show",
    "insp_note_sampled_raw": ("This run's schedule ranks by the raw probability of the token drawn (raw p(sampled "
        "token)): the number is raw; only which token it belongs to was drawn at the temperature."),
    "insp_checker": "checker: **{rule}** broken: {msg} (`{text}`)",
    "rule_grammar": "grammar", "rule_entity": "entity", "rule_agreement": "agreement", "rule_sum": "sum",
    "live_of": "computing: step {s} of {n} planned · {c} of {g} positions confirmed",
    "live_of_unknown": "computing: step {s} · {c} of {g} positions confirmed (the threshold decides the steps)",
    "live_queued": "waiting for a free slot: {a} requests ahead of yours",
    "live_queued_eta": "waiting for a free slot: {a} requests ahead of yours · about {s} s",
    "f_unfinished": "unfinished sentence at the end (not counted)",
    "f_forked": "forked from its parent trace", "fk_at": "after {s} steps: {what}",
    "fk_force": "forced (position=id) {pos}", "fk_remask": "{pos} taken back to [MASK]", "fk_knob": "{knob} {new} (was {old})",
    "fk_same": "nothing changed", "fk_sep": "; ", "fk_mark": "fork",
    # ===== the Compare, Sweep and About tabs =======================================================================
    # ----- compare ----------------------------------------------------------------------------
    "lessons": "One-click lessons",
    "compare_note": ("Both sides decode the Playground's prompt with its seed and gen length, in one batch; a field "
        "a config leaves out takes the balanced preset's value (on a renoising model, the model's own). "
        "One player moves both to the same step; positions whose token differs there are underlined in red."),
    "config_a": "Config A (JSON: DecodeConfig fields)", "config_b": "Config B",
    "compare_run": "Compare", "side_a": "A", "side_b": "B", "side_masked": "a mask",
    "side_tip_step": "differs at step {f}: A shows {a}, B shows {b}", "look_for": "What to look for",
    "side_step_of": "both at step {f} of {n} · {k} positions differ", "measured": "What we measured on `{model}`",
    "diverge_none": "The two runs confirmed the same positions at every step.",
    "diverge_at": ("The orders agree for {a} step(s) and diverge at step {s}; {n} of {g} positions were confirmed at "
        "a different step, and {t} positions hold a different token."),
    "batch_note": "Decoded in one batch with {n} neighbour prompt(s). Same text as when decoded alone: A {a}, B {b}.",
    "neighbours": "neighbour prompts in the same batch", "yes": "yes", "no": "no",
    # ----- sweep ------------------------------------------------------------------------------
    "sweep_intro": ("Regenerate the article's tuning table from measurement: every cell is decoded for every seed "
        "and prompt, all in **one batched decode**. Numbers are means over seeds and prompts."),
    "sweep_temps": "temperatures", "sweep_topk": "initial top_k = L / d", "sweep_decays": "decays",
    "sweep_seeds": "seeds per cell", "sweep_prompts": "prompts (one per line)", "sweep_run": "Run sweep",
    "sweep_table": "All cells", "sweep_done": "{n} requests of `{model}` in one batched decode, {s:.1f} s.",
    "m_nfe": "steps / NFE", "m_repeat_3": "repeated 3-gram share", "m_distinct_2": "distinct-2",
    "m_mean_logprob": "mean log-prob of drawn tokens",
    # ----- about ------------------------------------------------------------------------------
    "about_md": ("### The decoding loop\nA masked-diffusion LM fills a canvas `prompt + [MASK] × L`. Every **step** "
        "runs one forward pass over the whole\ncanvas and predicts a distribution at each masked position. "
        "Then:\n\n1. **Confidence** comes from the *raw* logits: `p = softmax(logits)`, confidence = `max p` (or "
        "margin / entropy).\n2. The **schedule** picks which positions to confirm: top-k with decay (`topk_decay`: "
        "`k ← ⌊k · decay⌋`, never\n   below `min_k`), a fixed number of steps (`fixed_steps`), a confidence "
        "threshold (`threshold`), adaptive\n   (`adaptive`), Dream's linear time (`linear_time`: each step "
        "confirms the share of the masks left that a linear\n   noise schedule unmasks between two times), or the "
        "EB-sampler (`eb`: the lowest-entropy masks while the entropies\n   before each sum to at most `gamma`).\n3. Only "
        "at those positions a token is **drawn** from `softmax(logits / T)`; `T = 0` means argmax.\n4. Confirmed "
        "tokens never change. The run ends when no mask is left; NFE = number of forward passes.\n\n### Reading the "
        "playground\n- **Canvas**: the text after the chosen step. Tints = confidence when the token was confirmed "
        "(warm = unsure,\n  cool = sure); outlined = confirmed at this step; dashed grey = still masked, with the "
        "model's current argmax guess.\n  Click a token to inspect it.\n- **Heatmap**: rows are steps, columns "
        "positions; colour = the confidence the schedule ranked by; □ = confirmed there.\n- **Unmasking order**: the "
        "span laid out in rows, each cell coloured by the step it was confirmed at.\n- **Per step**: how many "
        "positions each step confirmed (k) and the temperature in force; below, each confirmed\n  token's confidence "
        "as the schedule saw it (dots) and the raw probability of the token actually drawn (crosses).\n- "
        "**Inspector**: the stored top candidates of a position; raw probabilities next to the tempered ones for "
        "the\n  temperature slider, computed from the stored numbers without calling the model.\n\n### The article's "
        "advice\nBalanced: `T ≈ 1.0`, `k₀ = L/4`, decay 0.9. Repetition → lower `k₀` (L/6) and keep `T ≥ 0.6`; "
        "incoherence → lower T\nor raise k. Tune the schedule first, then temperature. The **Compare** tab shows "
        "each mistake next to the correct\nversion, with what we measured on the embedded model; the **Sweep** tab "
        "rebuilds the tuning table from measurement.\n"),
    # ----- errors -----------------------------------------------------------------------------
    "err_trace": "trace file: {e}", "err_empty_grid": "sweep: choose at least one value for {v}",
    # ----- the world model's correctness table --------------------
    "wt_variant": "variant", "wt_steps": "steps", "wt_valid_runs": "valid runs",
    "wt_valid_sentences": "valid sentences", "wt_broken": "broken two-word names",
    "wt_breaking": "runs breaking {rules}", "wt_claim": "Claim: {c}.",
    "wt_pair_claim": "A vs B as in the Compare tab, scored by the world checker",
    # ===== user errors (`handlers.errors.localize` renders the checks' English messages with these) ================
    "err_invalid": "{name}={value} is invalid: expected {range}", "err_int_in": "an integer in [{lo}, {hi}]",
    "err_number_in": "a finite number in {l}{lo}, {hi}]",
    "err_temperature_in": "0 (argmax) or a number in [{lo}, {hi}]", "err_one_of": "one of {names}",
    "err_divisor": "a divisor of gen_length={g}", "err_multiple": "a multiple of the number of blocks ({n})",
    "err_stages": "None or three temperatures (early, middle, late)", "err_bool": "True or False",
    "err_no_field": "no such field; known fields: {names}",
    "err_json_object": "a JSON object of DecodeConfig fields", "err_same_length": "A's gen_length={g}",
    "err_at_least_one": "at least one value", "err_needs_all": "confidence_from={src} needs sample_scope='all'",
    "err_too_big": "trace file has {n} bytes: this viewer reads at most {m}",
    "err_not_json": "trace JSON does not parse", "err_format": "trace format={v} is not this viewer's",
    "err_version": "trace version={v}: this dllm-viz reads version {n}", "err_nothing": "nothing was uploaded",
    "err_side_a": "config A: {e}", "err_side_b": "config B: {e}", "err_trace_config": "trace config: {e}",
    "err_trace_file": "trace file: {e}", "err_busy": "server busy: {e}", "err_other": "{e}", "err_title": "Error",
}
