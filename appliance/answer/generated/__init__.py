"""The generated answer: the local model's short answer from numbered sources, every sentence checked."""
