"""``python -m agentkit`` runs the ``agentkit-memory`` command (handy where the venv's
``bin/`` is not on PATH)."""

from agentkit.cli import main

raise SystemExit(main())
