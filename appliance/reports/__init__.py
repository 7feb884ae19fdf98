"""Reports for the SOP owners, read from the audit log: answer feedback and the gaps report."""
