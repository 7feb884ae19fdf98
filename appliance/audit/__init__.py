"""The audit log: one hash-chained JSON Lines record per API request, rotated and pruned.

format     the files, the line and the chain on disk (the one place they are written down)
fields     what a record may hold: a question preview and its sha256, sources, scalars; never answers
writer     AuditLog: append a record under the lock, rotate; a full disk takes the line back
retention  prune rotated files past retention, noting each in CHAIN first
verify     verify_audit: every break of the chain by file and line
reader     read_records, find_record, tail_audit, copy_audit_log
"""
