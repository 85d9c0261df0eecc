"""The command layer: the ``hoprag`` console script, one module per command group.

The top layer (docs/architecture.md): each module (``index``, ``train``, ``serve``, ...) registers
its parser with a handler and may import the core and every stage package (``indexing``,
``training``, ``distillation``, ``serving``, ``evaluation``, ``cluster``), only inside handlers, so
``hoprag --help`` is instant. Nothing imports this package.
"""

from hoprag_cli.entry import build_parser, main, parse_command, rewrite_argv

__all__ = ["build_parser", "main", "parse_command", "rewrite_argv"]
