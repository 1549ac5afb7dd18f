"""recallwatch.report"""
