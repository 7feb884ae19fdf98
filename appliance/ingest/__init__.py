"""Documents into the index: sources scanned, files loaded (loaders/) and chunked, chunks embedded, and each
run handed to the index through one reindex loop (pipeline.update_index), for files and BEIR corpora alike."""
