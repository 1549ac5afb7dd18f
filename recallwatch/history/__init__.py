"""recallwatch.history"""
