"""Command-line interface: one module per subcommand, each exposing ``add_parser`` and ``run``."""
