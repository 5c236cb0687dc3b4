"""The engine: attempts, the stage plan, endings, signals and deadlines, and the Context."""
