"""``python -m hoprag.cli ...`` (the entrypoint of submitted Ray jobs) is the ``hoprag`` script."""

from hoprag.cli.entry import main

raise SystemExit(main())
