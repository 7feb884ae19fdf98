"""Words that carry no search term, and words that carry no claim."""

from __future__ import annotations

# Dropped from lexical queries: OR-ing them in only slows bm25 down and adds noise. Contractions too, with
# their apostrophe (FTS5 splits "didn't" into didn + t) or without it, as operators type them (didnt).
_SEARCH_STOPWORDS_TEXT = """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your yours yourself
    yourselves please tell
    don doesn didn isn wasn aren weren hasn haven hadn won wouldn couldn shouldn t s ll ve re
    dont doesnt didnt isnt wasnt arent werent hasnt havent hadnt wont wouldnt couldnt shouldnt cant
    im ive youre thats whats theres"""
STOPWORDS = frozenset(_SEARCH_STOPWORDS_TEXT.split())

# Words that carry no claim in an answer sentence: the search stopwords, modals, sequencing and the
# LLM's own talk about its sources ("according to source 2").
_CLAIM_STOPWORDS_TEXT = """also must may might shall need needs prior following followed first next finally then
    step steps according source sources document documents documented procedure sop states stated says said
    mentioned described provided context information answer question however therefore thus additionally
    within without yes make sure per via etc eg ie one"""
CLAIM_STOPWORDS = STOPWORDS | frozenset(_CLAIM_STOPWORDS_TEXT.split())
