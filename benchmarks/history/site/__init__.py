"""`history site`: a static site of the history database (build.py)."""
