"""What the page shows of a trace, pure functions of it: the trace as the chunks the page reads and
draws every view from (`wire`), the page's renderer and what it is given once (`web`: app/web/*.js),
the few bits of HTML the server writes (`render`: run facts, badges, help), the Sweep tab's figures
(`figures`), colours and CSS (`palette`), literal text (`markup`), and per kind of trace what its view
adds (`cache`, `task`, `world`)."""
