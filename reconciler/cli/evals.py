"""``dst evals migrate``: turn legacy value cases into certified answers.

The plan is :func:`reconciler.certify.plan_migration`'s; this module reads the
lens from the working tree, prints what it will write, and writes it: each answer
as a new file (never over an existing one), then ``evals/cases.yaml`` replaced
atomically (or removed when no behavioural case is left). Only a person
certifies, so ``--by NAME`` is required: the person vouching for the legacy cases.

Exit codes: 0 migrated (or ``--dry-run`` showed the plan); 2 bad input (unknown
lens, no legacy case, blank ``--by``, a migrated lens that would not load).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from reconciler.cli.options import Format, FormatOpt, RepoOpt

evals_app = typer.Typer(name="evals", help="Behavioural cases: migrate legacy value cases.")


@evals_app.command("migrate")
def migrate(
    lens: Annotated[str, typer.Option("--lens", help="Lens whose evals/cases.yaml to migrate.")],
    by: Annotated[
        str, typer.Option("--by", help="The person vouching for the legacy cases (recorded).")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the plan, write nothing.")
    ] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Move value cases (question + expected SQL) to answers/<id>.yaml as certified answers."""
    # lazy: reconciler.certify loads the engines, which `dst --help` does not need
    from reconciler.certify import CASES, plan_migration, utc_now, write_answer
    from reconciler.files import replace_file
    from reconciler.git import trees as gitstate

    git = gitstate.open_repo(repo)
    root = gitstate.repo_root(git)
    lens_root = f"{gitstate.LENSES_DIR}/{lens}"
    files = gitstate.worktree_files(root, lens)
    plan = plan_migration(lens, files, lens_root, by=by, at=utc_now())
    written: list[str] = []
    if not dry_run:
        for aid, _rel, content in plan.answers:
            written.append(write_answer(root, lens_root, aid, content))
        cases_path = root / lens_root / CASES
        if plan.cases_file is None:
            cases_path.unlink()
        else:
            replace_file(cases_path, plan.cases_file)
    paths = [f"{lens_root}/{rel}" for _, rel, _ in plan.answers]
    if fmt is Format.json:
        print(
            json.dumps(
                {
                    "schema_version": 1,
                    "command": "evals migrate",
                    "lens": lens,
                    "dry_run": dry_run,
                    "answer_files": paths,
                    "cases_kept": plan.kept,
                },
                indent=2,
            )
        )
    else:
        verb = "would write" if dry_run else "wrote"
        for path in paths:
            print(f"{verb} {path}")
        print(
            f"{lens}: {len(paths)} value case(s) → certified answers (by {by.strip()}); "
            f"{plan.kept} behavioural case(s) kept in {lens_root}/{CASES}"
        )
        if not dry_run:
            print("review and commit them; the next `dst apply` self-tests each new answer")
    return 0
