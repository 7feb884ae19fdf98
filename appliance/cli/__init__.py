"""The command line: click, thin. Each command parses its options, calls one library function and prints
(text, or one JSON object with --json); failures exit 1, usage errors 2."""
