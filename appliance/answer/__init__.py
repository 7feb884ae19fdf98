"""Answer generation: prompt assembly, citation parsing and support checking."""
