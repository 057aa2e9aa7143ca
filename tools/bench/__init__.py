"""`python -m tools.bench` (`make bench`): what the book costs to build, run and
read, against its budgets (`__main__`); `explorer_cases` builds one explorer of
each kind, for the bench and the tests."""
