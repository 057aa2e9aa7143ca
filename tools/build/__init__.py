"""The strict build of the book: `python -m tools.build` (see `book`), and the
update of the Chinese catalogues after an English edit,
`python -m tools.build --translations` (see `translations`)."""
