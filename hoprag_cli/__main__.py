"""``python -m hoprag_cli ...`` (the entrypoint of submitted Ray jobs) is the ``hoprag`` script."""

from hoprag_cli.entry import main

raise SystemExit(main())
