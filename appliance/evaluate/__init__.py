"""Offline evaluation: IR metrics computed as trec_eval computes them, BEIR dataset loaders and TREC run files.

Nothing here retrieves; callers produce runs (``{qid: {docid: score}}``) and this package scores, reads and writes
them.
"""
