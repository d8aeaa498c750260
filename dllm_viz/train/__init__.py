"""Training: how the embedded models were made (`python -m dllm_viz.train {fit,tokenize,average,export} ...`).

One module per job: `config` (the recipe, `TrainConfig`), `data` (the text stream or prompt/answer
`pairs` as clean batches), `objectives` (what a step optimises: the corruption and the loss, one
module per objective, discovered), `model` (the recipe's model, or an earlier one's weights grown to
it), `optim` (AdamW and the schedule), `precision` (bf16 autocast), `loop` (`fit`), `evaluation`
(held-out ELBO and accuracy), `checkpoint` (checkpoints, averages, export) and `cli` (the command).
"""
