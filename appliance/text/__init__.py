"""The language rules, in one place: every layer that reads text (ingest, retrieve, answer) imports them.

Modules, lowest first (each imports only those above it):
  stopwords   words that carry no search term (STOPWORDS) or no claim (CLAIM_STOPWORDS)
  tokens      words of a query or a sentence, as searched and as checked
  quantities  numbers, number words, units and their aliases (72 psi, 15 minutes, 0.2 mg/L)
  identifiers tags, alert names, commands, versions (VLV-3042-B, KubePodCrashLooping, gitlab-ctl)
  stems       the support check's light stemmer with operator synonyms (close/closed/shut agree)
  terms       what a sentence claims: content-word stems, identifiers and quantities
  negation    which words a "not"/"never" applies to
  sentences   sentence, list item, heading, table row and code block spans; the chunker's cut points
  edits       the strings one typing slip from a word (an alphabet)
  english     whether an unknown word is English, a typo of English, or shaped like English (a lexicon)
  wording     how operators write: tokens that carry no subject, words shaped like names
  frequencies "quarterly", "every shift": how often, in words
  questions   what a question asks for: a value, a procedure, a fact; how many of what
  procedures  section kinds of a procedure document: front matter, generic headings, step headings
  layout      a section's items: numbered steps, bullets, tables, code, WARNING/CAUTION/HOLD POINT lines

English only, and written so that another language is a swap of this package. FTS5's own porter
tokenizer (index/migrations.py) stems the lexical index; `stems` serves the checks made in Python.
"""
