"""The page's strings in English: the reference every other language translates (`dllm_viz.app.strings`).

Keys are short English identifiers; a placeholder `{name}` is filled by `t(key, lang, name=...)`.
"""
from __future__ import annotations

NAME = "English"  # on the language switch

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
    # ===== the Compare, Sweep and About tabs =======================================================================
    # ----- compare ----------------------------------------------------------------------------
    "lessons": "One-click lessons",
    "compare_note": ("Both sides decode the Playground's prompt with its seed and gen length, in one batch. "
        "One player moves both to the same step; positions whose token differs there are underlined in red."),
    "config_a": "Config A (JSON: DecodeConfig fields over the balanced preset)", "config_b": "Config B",
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
    # ===== confirmations taken back: the revision rules' knobs, help, marks and the study ==========================
    # ----- the knobs (layout/revision.py) ----------------------------------------------------------
    "revise_box": "Taking back (revision rule)", "revise": "revision rule",
    "info_revise": "what a step may take back to [MASK] or rewrite, inside the current block",
    "choice_revise_none": "a confirmed token is final (the article's loop)",
    "choice_revise_remdm": "ReMDM in counts (ours): re-mask decided tokens at random, confirm as many more",
    "choice_revise_remdm_shipped": "ReMDM's sampler as shipped: a coin per position by time, then noise removal",
    "choice_revise_rcr": "RCR in counts (ours): re-mask the block's tokens decided with the lowest confidence",
    "choice_revise_rcr_shipped": "RCR as MDPO runs it: one running confidence over the sequence, MaskGIT's split",
    "choice_revise_wino": "WINO: draft, then a verify pass takes back what it no longer supports",
    "choice_revise_joint_threshold": "LLaDA 2.1: rewrite visible tokens (needs a model that can edit)", "indel": "insert / delete rule",
    "info_indel": "a model trained to edit lengths may delete a position or split one in two; positions move",
    "choice_indel_none": "positions stay: nothing is inserted or deleted",
    "choice_indel_joint_threshold_indel": "LLaDA 2.2: also DELETE a position or SPLIT one (needs world-indel)",
    # ----- positions that move (views/moves.py): a token followed through deletes and splits -------------
    "mv_born_start": "in the canvas from the start, at position {p}", "mv_born_split": "a mask a split opened at step {s}, at position {p}",
    "mv_born_pad": "a mask padded at the block's end after a delete at step {s}, at position {p}",
    "mv_moved": "step {s}: moved from position {a} to {b}",
    "mv_heatmap_index": ("Positions moved (insert/delete): each row of the heatmap is indexed by the positions "
        "entering its step; a token that moved appears under another number in later rows."),
    "mv_order_index": ("The order map indexes the final positions: each token keeps the step it was last decided "
        "at wherever it moved."),
    "mv_ended": "{d} positions deleted and {s} split during the decode.", "remask_sigma": "ReMDM sigma",
    "info_remask_sigma": "how ReMDM sets the chance a decided token goes back",
    "choice_sigma_cap": "min(eta, sigma_max)", "choice_sigma_rescale": "eta × sigma_max",
    "choice_sigma_conf": "the less sure a token was, the likelier it goes back",
    "choice_sigma_loop": "eta, in a loop once the block is mostly visible", "remask_eta": "ReMDM eta",
    "info_remask_eta": "cap on sigma, share of sigma_max, or the loop's sigma",
    "remask_alpha_on": "ReMDM loop starts at this visible share",
    "info_remask_alpha_on": "the loop starts once this share of the block is visible", "remask_loop_steps": "ReMDM loop steps per block",
    "info_remask_loop_steps": "extra steps that re-mask and re-confirm; each is a forward pass",
    "remask_t_on": "ReMDM loop starts at time t_on", "remask_t_off": "ReMDM loop ends at time t_off",
    "info_remask_t_on": "ReMDM's sampler: time runs from 1 to 0; its loop runs while t_off < t <= t_on",
    "info_remask_t_off": "below it, MDLM's unmasking again until every mask is filled", "verify_threshold": "WINO verify threshold",
    "info_verify_threshold": "a decided token whose probability, with itself hidden, is below this goes back",
    "verify_pass": "WINO verify pass", "info_verify_pass": "shadow: WINO's, the verify read from a shadow block in "
        "the step's one forward; canvases: ours, one canvas per decided position, a second forward",
    "choice_verify_pass_shadow": "shadow block in the step's forward (WINO's)",
    "choice_verify_pass_canvases": "one canvas per decided position (ours)", "edit_threshold": "edit threshold",
    "info_edit_threshold": "rewrite a visible token where another token's probability is above this",
    "max_post_edit_steps": "edit-only steps per block",
    "info_max_post_edit_steps": "steps a block may stay open to edit after its last mask",
    "penalty_lambda": "repetition penalty (penalty_lambda)",
    "info_penalty_lambda": "subtracted from each position's logit of the previous position's token",
    "threshold_strict": "strict threshold (> instead of ≥)",
    "info_threshold_strict": "how SGLang and WINO compare; read by the threshold schedule only",
    "revise_note": ("A revision rule lets a step take back what it confirmed. **ReMDM** (`kuleshov-group/remdm`) "
        "re-masks decided tokens at random and confirms as many more; **RCR** (`autonomousvision/mdpo`) re-masks "
        "those decided with the lowest confidence; **WINO** (`Feng-Hong/WINO-DLLM`) drafts, then a verify pass, a "
        "forward of its own that counts in NFE, takes back drafts that fall below its threshold; **LLaDA 2.1's** "
        "token editing (SGLang's `JointThreshold`) rewrites visible tokens whose argmax differs, which needs a model "
        "trained to predict at visible positions. The presets “as shipped” set each rule as its code ships it."),
    "rv_banner_counts": ("Revision rule `{rule}`: {r} tokens taken back to [MASK] and {e} rewritten, in {s} steps "
        "({n} forward passes; a verify pass counts)."),
    # ----- the presets as shipped -----------------------------------------------------------------
    "preset_llada21": "LLaDA 2.1 as shipped", "preset_llada22_indel": "LLaDA 2.2 insert/delete as shipped",
    "preset_sglang_low_confidence": "SGLang LowConfidence", "preset_wino": "WINO as shipped",
    "preset_remdm": "ReMDM as shipped", "preset_rcr": "RCR as shipped", "preset_rcr_counted": "RCR in counts (ours)",
    "preset_remdm_counted": "ReMDM in counts (ours)", "preset_wino_canvases": "WINO, verify by canvases (ours)",
    "preset_eb_sampler": "SGLang EB-sampler", "gamma": "entropy budget γ (eb)",
    "info_gamma": "confirm the lowest-entropy masks while the entropies before each sum to at most this (nats)",
    # ----- the renoise canvas (DiffusionGemma, core/rules/renoise.py) ---------------------------------
    "preset_diffusion_gemma": "DiffusionGemma as shipped (transformers)",
    "preset_gemma4_renoise": "Gemma4Renoise as shipped (SGLang)", "entropy_bound": "entropy bound (renoise)",
    "info_entropy_bound": "accept the lowest-entropy positions while their entropies, less the largest, sum to at most this (nats)",
    "t_min": "last temperature t_min", "info_t_min": "the temperature falls linearly from t_max towards this",
    "t_max": "first temperature t_max", "info_t_max": "the temperature of a canvas's first step (= t_min: flat)",
    "max_denoising_steps": "steps per canvas", "info_max_denoising_steps": "at most; the stop rule may end a canvas sooner",
    "stability_threshold": "stability S", "info_stability_threshold": "stop once the argmax canvas equals the last S (and is confident)",
    "confidence_threshold": "confidence (nats)", "info_confidence_threshold": "… and the mean tempered entropy is below this (0: never)",
    "canvas_length": "canvas length", "info_canvas_length": "tokens per canvas (the checkpoint's by default)",
    "acceptance_from": "acceptance entropy from", "info_acceptance_from": "tempered: as shipped; raw: the article's rule",
    "choice_acceptance_from_tempered": "tempered logits (transformers, SGLang)",
    "choice_acceptance_from_raw": "raw logits (the article's rule)",
    "canvas_box_renoise": "Renoising canvas (DiffusionGemma)", "knob_auto": "auto", "knob_auto_choice": "as the checkpoint ships it",
    "canvas_note_renoise": "This model never masks: each step accepts its lowest-entropy proposals and renoises the rest. \"auto\" takes the checkpoint's generation config (else transformers' defaults); the masked canvas's schedules, sampling switches and revision rules do not apply to it.",
    "rs_temperature": "temperature", "rs_shipped": "shipped", "rs_flat": "flat", "rs_tempered": "tempered (shipped)",
    "rs_raw": "raw (the article's rule)", "rs_valid_tpf": "valid runs, tokens per forward", "rs_bound": "entropy bound",
    "rs_aup": "AUP", "rs_stability": "stability threshold", "rs_valid": "valid runs", "rs_tpf": "tokens per forward",
    "rs_stops": "canvases the stop ended", "rn_renoised": "renoised", "rn_stable": "argmax stable",
    "rs_footer": "{model}, {n} runs per setting (prompts × seeds), {g} new tokens; 95% Wilson intervals.",
    "rn_state_empty": "not begun", "rn_state_noise": "noise (random token)", "rn_state_accepted": "accepted proposal",
    "rn_state_final": "final", "rn_lost": "renoised: lost an accepted token", "rn_changed": "token changed",
    "rn_tip_empty": "position {pos} · its canvas has not begun", "rn_tip_final": "position {pos} · final: {tok}",
    "rn_tip_noise": "position {pos} · noise {tok} (what step {f} reads)", "rn_nats": "entropy (nats)",
    "rn_tip_accepted": "position {pos} · {tok}, accepted since step {s}", "rn_tip_lost": "renoised at step {s}: lost {old}",
    "rn_tip_entropy": "entropy at step {s}: {h} nats", "rn_step": "step", "rn_changes": "times changed",
    "rn_stability_title": "Stability (colour = step last changed;\nnumber = times changed)", "rn_canvas": "canvas",
    "rn_heat_title": "Accepted (purple) or renoised (grey) per step\n(red: lost a token; • changed; □ last change)",
    "rn_series_title": "Per step: accepted, temperature, stop;\nentropy against the bound and threshold",
    "rn_accepted": "positions accepted", "rn_bound": "entropy bound", "rn_sum_less_max": "accepted entropy less the largest",
    "rn_sum": "accepted entropy", "rn_temperature": "temperature", "rn_mean_entropy": "mean tempered entropy",
    "rn_confidence": "confidence threshold", "rn_stopped": "stop fired", "rn_last_changed": "last changed at step",
    "curve_lesson_box": "The lesson: why parallel decoding breaks, and what taking back does",
    # ----- the revision study on the world model (views/lessons.study_md) -------------------------
    "rt_rule": "rule", "rt_decoder": "decoder", "rt_nfe": "NFE", "rt_valid": "valid runs", "rt_broken": "broken names",
    "rt_sums": "wrong sums", "rt_revised": "taken back / rewritten per run", "rt_matched": "monotone at the same NFE: NFE, valid runs",
    "rt_monotone": "monotone (nothing taken back)", "rt_editing": "+ editing (JointThreshold)",
    "rt_model": "world model", "rt_oracle": "oracle",
    "rt_cannot_edit": "not measured: this model cannot edit", "rt_regime_threshold": "Threshold 0.9 at T = 1",
    "rt_regime_k4": "Four tokens per step (constant k = 4) at T = 1",
    # ----- insert and delete counted on world-indel (views/lessons.indel_study_md) -----------------
    "it_draft": "first draft", "it_indel": "InDel (llada22_indel)", "it_joint": "JointThreshold (llada21): rewrites in place",
    "it_kind_missing": "a word missing", "it_kind_extra": "a word doubled", "it_kind_none": "the right draft (control)",
    "it_op_rewrite": "rewrites", "it_op_remask": "taken back", "it_op_delete": "deletes", "it_op_split": "splits", "it_op_cut": "cut",
    "it_footer": "{model}, {n} runs per cell (prompts × seeds), gen_length {g}; valid runs, 95% Wilson intervals.",
    "rt_regime_shipped": "The presets as shipped (the originals' own loops) and ours, in counts, at T = 1",
    "rt_shipped_monotone": "monotone (fixed steps)", "rt_shipped_rcr": "RCR as shipped (MDPO)", "rt_shipped_rcr_counted":
        "RCR in counts (ours)", "rt_shipped_remdm": "ReMDM as shipped", "rt_shipped_remdm_counted": "ReMDM in counts "
        "(ours)", "rt_shipped_wino": "WINO as shipped (shadow block)", "rt_shipped_wino_canvases": "WINO, verify by "
        "canvases (ours)",
    "rt_footer": ("{model} and its exact oracle (the perfect editor), {n} runs each (prompts × seeds), gen_length "
        "{g}; 95% Wilson intervals."),
    # ----- lessons ----------------------------------------------------------------------------
    "mt_final_logprob": "mean raw log-prob of the final tokens (each at its last decision)",
    "mt_revisions": "tokens taken back or rewritten per request",
    # ----- the rules' names -------------------------------------------------------------------
    "rv_rule_rcr": "RCR", "rv_rule_remdm": "ReMDM", "rv_rule_wino": "WINO", "rv_rule_joint_threshold": "token editing",
    # ----- the canvas and the inspector (app/web/) ----------------------------------
    "rv_tip_edited": "position {pos} · rewritten at step {s}\nwas {old} (raw p {po})\nnow {tok} (raw p {p})",
    "rv_tip_remasked": "taken back at step {s}: was {old} ({score})", "rv_history": "History of position {p}, up to step {s}",
    "rv_hist_confirm": "step {s}: confirmed **{tok}** (raw p {p})",
    "rv_hist_edit": "step {s}: rewritten {old} → **{tok}** (raw p {p}, the old token's {po})",
    "rv_hist_remask": "step {s}: {old} taken back to [MASK] ({score})",
    "rv_hist_force": "step {s}: **{tok}** forced by a fork", "rv_forced": "forced by a fork",
    "insp_forced": "**Forced by a fork** before step {next}: **{tok}** (a fork's change: no probability decided it).",
    "insp_edited": ("**Rewritten at step {s}**: {old} → **{tok}** (raw p = {p}; the old token's raw p there = {po}). "
        "The candidates below are that step's."),
    "legend_edited": "rewritten (hover: the old token)", "legend_remasked": "taken back at this step (the old token, struck through)",
    # ----- figures ----------------------------------------------------------------------------
    "rv_confirmed": "confirmed", "rv_remasked": "taken back", "rv_edited": "rewritten", "rv_was": "was",
    "rv_score": "score", "rv_score_remdm": "σ", "rv_score_rcr": "decided with", "rv_score_wino": "verify p",
    "rv_earlier": "… {n} earlier", "rv_decided": "decided {n}×", "rv_step": "{r} taken back · {e} rewritten",
    "rv_forwards": "{n} forwards (verify pass)", "rv_reused": "no forward (p_x0 reused)", "rv_per_step": "taken back + rewritten",
    "rv_heatmap_key": "× taken back, ◇ rewritten", "fig_order_revised": "Order (colour = step last decided;\n×n = decided n times)",
    # ----- trace diff (core.diff, app/views/diff.py) ------------------------------------------
    "diff_same": "A and B made the same decisions at every step ({n} steps).",
    "diff_first": "They part at step {s}{where}: {what} (A: {a}; B: {b}).", "diff_at": ", position {p}",
    "diff_all": "Every difference: {counts}, at {k} of {n} steps.", "diff_settings": "Settings that differ: {changes}.",
    "diff_steps": "Steps: A {a}, B {b}.", "diff_ab": "**A**: the trace on show; **B**: the uploaded file.",
    "diff_nothing": "nothing", "diff_mask": "[MASK]", "diff_end": "its last step", "diff_early_stop": "its early stop",
    "diff_went_on": "went on", "diff_kind_forced": "a fork's change", "diff_kind_another_selection": "another selection",
    "diff_kind_another_token": "another token", "diff_kind_taken_back": "a taken-back token",
    "diff_kind_another_rewrite": "another rewrite", "diff_kind_another_stop": "another stop",
    # ===== knobs that decode together (handlers/fit.py): what the page set for the visitor ==========================
    "fit_dual_block": ("The dual cache keeps the keys of the blocks after the current one, so it needs blocks: "
        "block length set to {b}."),
    "fit_block": "Block length {a} does not divide gen length {g}: set to {b}, the nearest that does.",
    "fit_steps": "{a} steps cannot be shared evenly by {n} block(s) of a gen length of {g}: set to {b}.",
    "fit_cache_model": ("This model runs no {c} cache (its own modeling code computes whole canvases): cache set to"
        " none."),
    "fit_cache_revise": ("A cached step scores only the current block's masks, and a revision rule scores decided "
        "tokens: with the {c} cache chosen, the revision rule ({r}) was set to none."),
    "fit_revise_cache": ("A revision rule scores decided tokens, and a cached step scores only the current block's "
        "masks: with the revision rule {r} chosen, the cache ({c}) was set to none."),
    "fit_cache_stop": ("The early stop fills every later mask with what it predicts there, which a cached step does "
        "not compute: with the {c} cache chosen, the early stop was turned off."),
    "fit_stop_cache": ("The early stop fills every later mask with what it predicts there, which a cached step does "
        "not compute: with the early stop on, the cache ({c}) was set to none."),
    "fit_indel_preset": ("The insert/delete rule {r} decides each step itself: the other knobs set as its preset "
        "`{p}` ships them."),
    "fit_indel_off": "The insert/delete rule {r} needs the other knobs as its preset sets them: it was turned off.",
    "fit_indel_model": "This model cannot edit lengths (it has no DELETE and SPLIT tokens): the rule {r} was turned off.",
    # ===== a revised trace on the canvas: the status line (canvas.js) =============================================
    "rv_status": " · {r} taken back, {e} rewritten",
    # ===== the banner of a preset "as shipped": what the shipped rule does (handlers/play.shipped_banner) ==========
    "shipped_head": "**{p}**: {what} (`{src}`).",
    "shipped_diff": ("Against the article's rule (rank by raw confidence, draw only where it confirms) on the same "
        "seed: {n} of {g} positions were confirmed at a different step and {t} hold a different token."),
    "shipped_same": ("Here it decodes exactly what the article's rule does; the Compare lesson “{lesson}” shows "
        "where they part: [open it]({href})."),
    "sb_llada": ("draws a token at every masked position, then confirms the ones whose drawn token has the highest raw"
        " probability"),
    "sb_dream": ("draws a token at every masked position after temperature and top-p, then confirms the ones whose "
        "drawn token has the highest tempered, filtered probability"),
    "sb_fast_dllm": ("draws a token at every masked position, then confirms every one whose raw probability reaches"
        " 0.9 (at least one)"),
    "sb_llada21": ("confirms the masks above 0.5 (at least one) and rewrites every visible token whose argmax differs, "
        "up to 16 edit-only steps per block; needs a model that can edit"),
    "sb_sglang_low_confidence": ("takes the argmax and confirms every mask of the block above 0.95, else the likeliest"
        " one"),
    "sb_wino": "drafts every mask above 0.6, then takes back the drafts below 0.9, read from a shadow block in the step's one forward",
    "sb_wino_canvases": "ours: drafts as WINO does, then a verify pass of its own (a canvas per decided position) takes back the drafts below 0.9",
    "sb_remdm": "a coin per position by time: MDLM until t = 0.55, a loop that re-masks each token with probability 0.02 until 0.05, then noise removal",
    "sb_remdm_counted": "ours, in counts: unmasks at random positions; once 90% of the block is visible, a loop re-masks each token with probability 0.02",
    "sb_eb_sampler": ("takes the argmax and confirms the lowest-entropy masks while their entropies sum to at most"
        " 0.15 (at least one)"),
    "sb_rcr": "one running confidence over the whole sequence: each step fills the most confident masks and re-masks the weakest (MaskGIT's split)",
    "sb_rcr_counted": "ours, in counts: decided tokens compete with the masks by the confidence they were decided with; the weakest are re-masked",
    "sb_llada22_indel": ("confirms and rewrites as LLaDA 2.1 does, and may also delete a position or split one in two; "
        "needs a model trained to edit lengths"),
    # ===== the Sweep of a checkable model: its checker's columns (handlers/sweep.checked_scores) ===================
    "col_valid_sentences": "valid sentences (world checker)", "col_right_answers": "right answers (task checker)",
    "sweep_mean_valid_sentences": "Valid sentences over the grid: {v:.0%}.",
    "sweep_mean_right_answers": "Right answers over the grid: {v:.0%}.",
    # ===== scenes: each revision rule where it visibly acts (handlers/scenes.py) =================================
    "scenes": "Each rule where it takes back or rewrites (the world model, a prompt and seed where it does):",
    "scene_wino": "WINO takes back", "scene_remdm": "ReMDM takes back", "scene_rcr": "RCR takes back",
    "scene_llada21": "LLaDA 2.1 rewrites",
    # ===== the k line under a revision rule that adds steps (handlers/play.k_steps) ================================
    "k_sequence_revised": "k per step, the schedule's plan: {ks} → {n} steps, and the steps `{rule}` adds as it runs",
    # ===== the task curve's title: d3LLM's score, named (views/figures.task_curve) ================================
    "fig_task_aup": "AUP (d3LLM's area under right answers vs tokens per forward): model {m}, oracle {o}",
    # ===== the page's footer (layout/header.build_footer; Gradio's own is hidden) =================================
    "footer": "Use via API: /generate ({api}) · built with Gradio", "footer_api": "the API page",
    # ===== the Compare tab's Stop (handlers/compare.stopped) =====================================================
    "cmp_stopped": "Stopped: this compare did not finish, so nothing of it is shown. Click a lesson or Compare to run it again.",
}
