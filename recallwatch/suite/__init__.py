"""recallwatch.suite"""
