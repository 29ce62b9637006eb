"""`python -m benchmarks.loadtest` (`make loadtest`): open-loop load against real gunicorn, issue 43's figures."""
