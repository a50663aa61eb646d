"""Run state: journal, working context, files and memory."""
