"""One module per `python -m engine` subcommand; each exposes `register(subparsers)`."""
