"""The ``fast`` tier's reading of a question: from English words to one SELECT (pure).

A newcomer walks it top down; each layer imports only the layers below it
(import-linter's ``reading layers`` contract in ``pyproject.toml``):

* :mod:`~reconciler.reading.parse` asks every reader what it makes of a question
  and keeps every reading (there is no first match);
* :mod:`~reconciler.reading.grammar` holds the question shapes (constructs): listings,
  existence, ratios, counts, measures, output lists …;
* :mod:`~reconciler.reading.phrases` holds the phrases several shapes share:
  periods, comparisons on facts, orderings, names, days of the week …;
* :mod:`~reconciler.reading.compile` turns a plan into one SELECT;
* :mod:`~reconciler.reading.resolve` finds join paths and checks a plan against the lens;
* :mod:`~reconciler.reading.ir` is what a question is read into
  (:class:`~reconciler.reading.ir.Plan`) and how a reading declines
  (:class:`~reconciler.reading.ir.Declined`);
* :mod:`~reconciler.reading.today` counts days from the current date.

The tier itself (exemplars, the one-measure grammar, the choice among readings)
is :mod:`reconciler.generators.fast`.
"""
