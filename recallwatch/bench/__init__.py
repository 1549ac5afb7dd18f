"""recallwatch.bench"""
