"""compare.py's library: match two result sets, bootstrap their ratios, give outcomes, write the report."""
