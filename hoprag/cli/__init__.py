"""The command layer: the ``hoprag`` console script, one module per command group.

Each module (``index``, ``train``, ``serve``, ...) registers its parser with a handler; this is the
only place under ``hoprag/`` that imports the stage packages (``indexing``, ``training``,
``serving``, ``evaluation``, ``cluster``), and only inside handlers, so ``hoprag --help`` is instant.
"""

from hoprag.cli.entry import build_parser, main, parse_command, rewrite_argv

__all__ = ["build_parser", "main", "parse_command", "rewrite_argv"]
