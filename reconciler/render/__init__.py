"""Rendering run reports: text and JSON, GitHub annotations and job summary, JUnit,
HTML, plots and the accuracy trend (pure; rendering never decides an exit code).
"""
