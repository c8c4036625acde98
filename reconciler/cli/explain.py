"""``dst explain ANSWER --lens L``: what the suite would send its generator for one answer.

The answer's question is assembled exactly as the certified suite re-asks it
(DESIGN §4 step 2: certified matching off, the answer excluded from its own
exemplars) on the lens at ``--to`` (default ``HEAD``, the candidate ``dst apply``
gates), and the recorded request is printed with each tier's exact payload: the
chat messages of the ``smart`` tier, the stdin JSON of the ``command`` tier.
Nothing is generated, executed or written. Exit 0; 2 for an unknown lens or answer.
"""

from __future__ import annotations

from typing import Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.oneshot import print_request
from reconciler.cli.options import Format, FormatOpt, RepoOpt
from reconciler.errors import UsageError
from reconciler.ids import AnswerId


def explain(
    answer: Annotated[str, typer.Argument(help="Certified answer id (answers/<id>.yaml).")],
    lens: Annotated[str, typer.Option("--lens", help="Lens the answer belongs to.")],
    to: Annotated[str, typer.Option("--to", help="Lens revision.")] = "HEAD",
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Print the request (and each tier's payload) the suite would send for ANSWER."""
    # lazy: the git readers load pygit2, which `dst --help` does not need
    from reconciler.git import trees as gitstate

    rt = runtime(repo)
    commit = gitstate.resolve_commit(rt.repo, to)
    trees = gitstate.lens_trees(rt.repo, commit)
    if lens not in trees:
        raise UsageError(
            f"no lens {lens!r} at {to} (lenses there: {', '.join(sorted(trees)) or 'none'})",
            fix="pass --lens one of the lenses listed, or --to a revision that has it",
        )
    the_lens = gitstate.load_lens_at(rt.repo, trees[lens])
    found = the_lens.answers.get(AnswerId(answer))
    if found is None:
        known = ", ".join(sorted(the_lens.answers)) or "none"
        raise UsageError(
            f"lens {lens} has no answer {answer!r} at {to} (answers: {known})",
            fix="pass an answer id from the lens's answers/ files",
        )
    return print_request(rt, the_lens, found.question, found.id, fmt)
