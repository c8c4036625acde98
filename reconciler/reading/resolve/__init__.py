"""What a plan's names reach in the lens: join paths and the checks on them (pure).

:mod:`~reconciler.reading.resolve.paths` finds the join path of each model a plan
reads; :mod:`~reconciler.reading.resolve.metricfilters` and
:mod:`~reconciler.reading.resolve.zeros` check a plan against the lens before it is
compiled.
"""
