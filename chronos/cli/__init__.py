"""The `chronos` command line: thin commands over the library."""
