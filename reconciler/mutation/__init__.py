"""mutation"""
