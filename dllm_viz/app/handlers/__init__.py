"""The page's handlers (no Gradio here): one object per tab, gathered by `playground.Playground`, the records
they return (`outputs`), widget values <-> `DecodeConfig` (`adapters`), a decode in progress (`live`),
each session's traces by handle, which the page reads (`traces`), the Sweep tab's grid (`sweep_grid`)
and user errors (`errors`)."""
