"""`python -m service.analysis`: the /correlate and /human-eval statistics on files, with tables and plots."""
