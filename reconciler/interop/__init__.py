"""Interoperation with other semantic layers: importers (Cortex Analyst, dbt MetricFlow)
and exporters (Cortex Analyst), mapping what they can and listing what they cannot.
"""
