"""Grove's REST API service (Falcon on gunicorn)."""
