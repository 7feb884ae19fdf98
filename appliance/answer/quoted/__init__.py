"""The quoted answer: the documents' own text, chosen, shown whole or in part, each item cited."""
