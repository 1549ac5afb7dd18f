"""recallwatch.web"""
