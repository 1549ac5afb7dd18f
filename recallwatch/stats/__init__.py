"""recallwatch.stats"""
