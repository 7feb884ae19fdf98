"""Documents uploaded over the API: names, checks, the upload folder."""
