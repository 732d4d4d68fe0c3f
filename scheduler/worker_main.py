"""The main module of every worker process (see scheduler/processes.py): deliberately empty."""
