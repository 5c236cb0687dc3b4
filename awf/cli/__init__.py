"""The command line: parses, calls the engine, reports, and exits with the seeds' codes."""
