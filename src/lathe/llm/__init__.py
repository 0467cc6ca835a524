"""Model providers: the Provider seam, concrete providers, the retry policy."""
