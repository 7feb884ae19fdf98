"""Answering a question: parsed once (question.py), then quoted (the documents' own text, quoted/) or generated
(the local model's short answer, checked, generated/); answerer.py orchestrates both."""
