"""recallwatch.ops"""
