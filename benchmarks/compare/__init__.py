"""compare.py's library: match two result sets, bootstrap their ratios, give verdicts, write the report."""
