"""The page's strings in English, one topic of `strings.en`: the decoding rules beyond the article's loop (revision,
insert and delete, the presets as shipped, the renoise canvas), their studies and banners."""
from __future__ import annotations

STRINGS: dict[str, str] = {
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
    "canvas_cmp_renoise": ("### Compare on a renoising model\nThe lessons compare masked decodes, so they do not run on this "
        "model. Configs A and B take its own knobs over its defaults (\"auto\": the checkpoint's): A, empty, decodes as "
        "shipped, accepting by the entropy of the **tempered** logits; B, `acceptance_from: raw`, ranks by the raw "
        "logits' entropy, the article's rule. Pick a masked model for the lessons."),  # the Compare tab on a renoising model (handlers/compare.lesson_text)
    "sweep_canvas_renoise": ("### Sweep on a renoising model\nOn a masked model this tab sweeps temperature, initial top_k and decay: knobs a renoising model does not read, so the grid does not run here. A renoising model's own knobs, its entropy bound, temperatures and stability threshold, are swept by `python -m dllm_viz.studies.renoise_lessons`; what it counted on the world language follows. Pick a masked model for the grid."),  # the Sweep tab on a renoising model (layout/sweep.sweep_note_md)
    "err_sweep_canvas": "model_pick={m} is invalid for the Sweep: its canvas is {c}, and the grid's knobs (temperature, top_k, decay) are the masked canvas's; expected a masked model",  # user errors of a renoising model's page (handlers/errors.localize)
    "err_lesson_canvas": "lesson={k} is invalid for {m}, whose canvas is {c}: the lessons compare masked decodes; expected a masked model (or configs A and B of its own knobs)",
    "err_knob_canvas": "{name}={value} is invalid for {m}, whose canvas is {c}: the knob applies to {kinds} canvases only; expected its default {default} (a {c} canvas reads {reads})",
    "err_masked_reads": "the masked canvas's schedules, revision rules and their knobs",  # what a masked canvas reads, in err_knob_canvas (core.rules.MASKED_READS)
    "rn_diverge_none": "The two runs accepted the same positions at every step; their outputs differ at {t} of {g} positions.",  # the Compare tab's summary of two renoising runs (views/render.divergence_text)
    "rn_diverge_at": ("The positions accepted agree for {a} step(s) and part at step {s}; the outputs differ at {t} of "
        "{g} positions."),
    "subtitle_renoise": ("A renoising diffusion LM (DiffusionGemma) never masks: its canvas starts as random tokens, and "
        "each step predicts every position, accepts the proposals whose entropy fits a bound and renoises the rest, so "
        "an accepted token may still change. Shipped, acceptance reads the **tempered** logits; the switch "
        "`acceptance_from` shows the article's rule (raw). Move a slider: the decode re-runs at once."),
    "canvas_box_renoise": "Renoising canvas (DiffusionGemma)", "knob_auto": "auto", "knob_auto_choice": "as the checkpoint ships it",
    "canvas_note_renoise": "This model never masks: each step accepts its lowest-entropy proposals and renoises the rest. \"auto\" takes the checkpoint's generation config (else transformers' defaults); the masked canvas's schedules, sampling switches and revision rules do not apply to it.",
    "rs_temperature": "temperature", "rs_shipped": "shipped", "rs_flat": "flat", "rs_tempered": "tempered (shipped)",
    "rs_raw": "raw (the article's rule)", "rs_valid_tpf": "valid runs, tokens per forward", "rs_bound": "entropy bound",
    "rs_aup": "AUP", "rs_stability": "stability threshold", "rs_valid": "valid runs", "rs_tpf": "tokens per forward",
    "rs_stops": "canvases the stop ended", "rn_renoised": "renoised", "rn_stable": "argmax stable",
    "rs_footer": "{model}, {n} runs per setting (prompts × seeds), {g} new tokens; 95% Wilson intervals.",
    "rn_state_empty": "not begun", "rn_state_noise": "noise (random token)", "rn_state_accepted": "accepted proposal",
    "rn_state_final": "final", "rn_new": "accepted at this step", "rn_lost": "renoised: lost an accepted token", "rn_changed": "token changed",
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
    "insp_fork": "fork", "insp_remask": "take it back (fork)",
    "insp_fork_title": "Fork: place {tok} at position {p} on the canvas on show (after step {f}) and decode the rest",
    "insp_remask_title": "Fork: take position {p} back to [MASK] on the canvas on show (after step {f}) and decode the rest",
    "insp_fork_note": ("fork: a new trace that goes on from the canvas on show (after step {f}) with that change; the "
        "facts list its fork point. Move the cursor to fork from another step."),
    "insp_switch": "or a setting from here:",
    "insp_switch_title": ("Fork: decode the rest after step {f} with this setting changed (its value as JSON; a word "
        "is read as text, empty as None)"),
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
    "diff_kind_another_acceptance": "another acceptance", "diff_kind_another_proposal": "another proposal accepted",  # a renoising step (core.diff)
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
