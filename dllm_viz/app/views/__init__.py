"""What the page shows of a trace, pure functions of it: the HTML and the data the page draws from
(`render`), Plotly figures (`figures`, `figures_revision`), colours and CSS (`palette`), literal text
(`markup`), and per kind of trace what its view adds (`cache`, `revision`, `task`, `world`)."""
