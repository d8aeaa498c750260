"""Training: how the embedded models were made (`python -m dllm_viz.train {fit,export} ...`)."""
