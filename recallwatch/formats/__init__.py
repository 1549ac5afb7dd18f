"""recallwatch.formats"""
