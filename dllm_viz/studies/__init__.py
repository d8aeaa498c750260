"""What the lessons and studies measured, and the commands that measure them (floor 4).

`lessons` (the Compare tab's A/B pairs on the embedded model), `world_lessons` (the article's lessons
as correctness on the world model), `revision_lessons` (the revision rules counted on the world model
and its oracle), `curves` (accuracy against parallelism on the task families) and `curve_lessons`;
`world_score` and `stats` score traces as rates with Wilson intervals. Imports `models`, `core`,
`world` and `tasks`; the page (`dllm_viz.app`) shows what they measured and never measures.
"""
