"""The page's layout: the components by name (`page`), and one builder per tab (`header` with About,
`play` with its revision box `revision`, `compare`, `sweep`)."""
