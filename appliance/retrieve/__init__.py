"""Retrieval: lexical (FTS5 bm25 through the index) and dense (HNSW) candidates, fusion, rerank, the spelling
correction and the evidence decision (answerable, or not in the documents)."""
