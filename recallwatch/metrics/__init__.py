"""recallwatch.metrics"""
