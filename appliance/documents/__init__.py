"""The original documents behind the citations: their bytes, confined to the registered sources
(`original`), and a safe rendered view of them with the cited place marked (`view`)."""
