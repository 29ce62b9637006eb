"""The server around the app: gunicorn, its worker, start-up checks and JSON logs."""
