"""The lab: code only the benchmarks use (scripts/), kept out of the shipped `appliance` package.

It may import the product; the product never imports it (tests/test_layers.py). A script run as
`python scripts/X.py` puts the repository root on sys.path first, then imports `scripts.lib.…`.

perturb       operator-style rewrites of a question (a typo, a synonym, a pasted alert, …)
flips         decision flip rates over those rewrites (scripts/bench_perturbations.py)
paired        paired comparison of two answer-benchmark runs (scripts/bench_answers.py --compare)
mtrag         MTRAG-UN follow-ups and the evidence decision (scripts/bench_mtrag.py, bench_sop.py)
beir_options  the options of the scripts that index a BEIR collection and query it
report        the end every benchmark shares: the figures as JSON on stdout and in --json FILE
"""
