"""The index, and the one door into it: the catalog (SQLite: documents, chunks, embeddings, FTS5; the source of
truth, its schema in migrations.py) and the vectors (Chroma, derived). Nothing outside this package holds SQL on
the catalog (tests/test_index_door.py): ingest writes through `Index`, retrieval reads through `Catalog` and
`Catalog.fulltext`, a backup snapshots through `Index.snapshot`."""
