"""One module per verb of the ``placement`` command; ``placement.cli.main`` lists them."""
