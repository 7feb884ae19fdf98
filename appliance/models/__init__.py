"""The models, from the local store only (never downloaded at run time): the store and its sha256 manifest,
the embedder and its runtimes, the calibrations that belong to one embedder, and the generators (generation/)."""
