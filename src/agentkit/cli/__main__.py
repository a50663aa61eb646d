"""``python -m agentkit.cli`` runs the same command as the console script."""

from agentkit.cli import main

raise SystemExit(main())
