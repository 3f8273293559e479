"""One module per schema revision, oldest first."""
