"""The server around the app: gunicorn, its worker, start-up checks, pod readiness and JSON logs."""
