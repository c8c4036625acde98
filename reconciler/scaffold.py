"""``dst init``'s files: a repository skeleton and one example lens that validates.

What :func:`plan_files` lays out (DESIGN §2 lens layout)::

    dst.yaml                          repository settings (warehouse:), kept if present
    .gitignore                        gains a ".dst/" line (the embedded warehouse)
    schemas/*.schema.json             the JSON Schemas the modelines point at, kept if present
    lenses/<name>/lens.yaml
    lenses/<name>/models/example_orders.yaml
    lenses/<name>/metrics/order_count.yaml, revenue.yaml
    lenses/<name>/answers/example_revenue_by_region.yaml   status: draft
    lenses/<name>/seeds/example_orders.csv

Every YAML file starts with the ``yaml-language-server`` modeline
(:mod:`reconciler.schemas`) and explains its keys in comments. The example is
complete on purpose: ``dst seed`` builds its table, ``dst apply`` promotes the
lens (``gate SKIPPED``: nothing is certified yet) and ``dst certify`` can certify
its first answer at once. The example answer is a *draft*: only a person
certifies (DESIGN §1), so init never writes an active answer.

This module only computes bytes; ``cli_init`` checks for existing files and
writes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from reconciler.schemas import KINDS, render, schema_filename, schema_for, with_schema_comment

GITIGNORE_LINE = ".dst/"


@dataclass(frozen=True)
class Scaffold:
    """The files of a new lens and the repository files it needs.

    Attributes:
        lens: the lens name.
        lens_files: ``{repository-relative path: bytes}``; each must not exist yet.
        repo_files: ``{repository-relative path: bytes}`` written only when missing
            (``dst.yaml``, ``schemas/*.schema.json``).
    """

    lens: str
    lens_files: dict[str, bytes]
    repo_files: dict[str, bytes]


def _lens_yaml(name: str, dialect: str) -> str:
    return f"""\
# The lens: settings for its models, metrics, skills, exemplars and answers.
name: {name}
description: Example lens from dst init; replace the example files with your own.
# The gate on every push that could change a certified answer's result:
# block (roll the apply back when one does not re-verify), warn (promote, loudly), off.
eval_gate: block
# SQL dialect of the warehouse, as sqlglot names it (duckdb, postgres, snowflake, bigquery ...).
dialect: {dialect}
# Rows fetched per query (at most 1000); an oracle over the cap is an error.
row_cap: 1000
# Questions with relative dates ("last month") are evaluated on a pinned day, or with
# as_of: today on the warehouse's current date (a certified one still needs a day):
# as_of: "2024-12-31"
generator:
  tiers: [fast]
# Words that put a question out of scope (refused), and ambiguous terms answered
# with a clarifying question instead of SQL:
exclusions: []
clarify:
  - term: performance
    ask: "Which measure do you mean by performance: revenue or the number of orders?"
"""


_MODEL = """\
# A semantic model: one physical table and the columns questions may name.
# This example reads the table `dst seed` builds from ../seeds/example_orders.csv;
# point `table:` at a table of your warehouse instead.
name: example_orders
description: Orders, one row per order (example data).
table: example_orders
primary_key: [order_id]
dimensions:
  - name: region
    data_type: string
    synonyms: [area]
    description: Sales region of the order.
time_dimensions:
  - name: order_date
    data_type: date
facts:
  - name: amount
    data_type: number
    description: Order amount.
# Joins to other models of the lens, e.g.:
# joins:
#   - to: customers
#     on: {customer_id: customer_id}
"""

_ORDER_COUNT = """\
# A metric: an aggregate over one model's table; synonyms are other ways users say it.
name: order_count
label: Orders
synonyms: [number of orders, order volume]
model: example_orders
expression: COUNT(*)
"""

_REVENUE = """\
name: revenue
label: Revenue
synonyms: [sales]
model: example_orders
expression: SUM(amount)
# Row filters applied whenever the metric is used, e.g.:
# filters: ["status = 'completed'"]
"""

_ANSWER = """\
# A certified answer: a question and the SQL a person verified (the oracle). dst re-asks
# the question whenever a push could change its result and compares both results.
# Certify answers with `dst certify --lens {name}`, which shows the SQL and its result:
#   dst certify --lens {name} --question "Revenue by region"
# This example is a draft: drafts are not certified and not re-verified. Setting
# status: active by hand does not certify it: an active answer needs a person in
# certified_by and the day they checked it in certified_at, which dst certify writes.
id: example_revenue_by_region
question: Revenue by region
sql: |
  SELECT region, SUM(amount) AS revenue
  FROM example_orders
  GROUP BY region
status: draft
provenance:
  certified_by: nobody yet (draft)
  certified_at: never
  source: dst init example
"""

_SEED = """\
order_id,order_date,region,amount
1,2024-01-05,North,120.00
2,2024-01-17,South,75.50
3,2024-02-02,North,42.25
4,2024-02-20,East,310.00
5,2024-03-08,West,18.75
6,2024-03-21,South,99.99
7,2024-04-11,East,56.40
8,2024-04-29,North,230.10
"""

_DST_YAML = """\
# yaml-language-server: $schema=schemas/dst.schema.json
# Repository settings shared by every lens.
# The warehouse lenses read unless --warehouse, DST_WAREHOUSE_URL or a lens's own
# warehouse: says otherwise; without one, dst uses the embedded DuckDB file that
# `dst seed` builds under .dst/ from the lenses' seeds/*.csv (a schema per lens). A
# configured warehouse is seeded only on request: dst seed --warehouse URL.
# Keep passwords out of git: write them as ${{ENV_VAR}} references, e.g.
#   warehouse: postgresql://analyst:${{PGPASSWORD}}@db.example.com:5432/analytics
{warehouse}"""


def plan_files(lens: str, *, dialect: str = "duckdb", warehouse: str | None = None) -> Scaffold:
    """The files ``dst init`` writes for ``lens``.

    Args:
        lens: a valid lens name (``lens.LENS_NAME_RE``; the caller checks it).
        dialect: the lens's SQL dialect (a sqlglot name).
        warehouse: a SQLAlchemy URL for ``dst.yaml``'s ``warehouse:``, or ``None``
            to leave it commented out (the embedded DuckDB default).

    Returns:
        The scaffold; every lens YAML file carries its schema modeline.
    """
    lens_rel = {
        "lens.yaml": _lens_yaml(lens, dialect),
        "models/example_orders.yaml": _MODEL,
        "metrics/order_count.yaml": _ORDER_COUNT,
        "metrics/revenue.yaml": _REVENUE,
        "answers/example_revenue_by_region.yaml": _ANSWER.format(name=lens),
    }
    lens_files = {
        f"lenses/{lens}/{rel}": with_schema_comment(rel, text.encode("utf-8"))
        for rel, text in lens_rel.items()
    }
    lens_files[f"lenses/{lens}/seeds/example_orders.csv"] = _SEED.encode("utf-8")
    # JSON's quoted string is a YAML double-quoted scalar: safe for any URL text.
    setting = f"warehouse: {json.dumps(warehouse)}\n" if warehouse else ""
    repo_files = {"dst.yaml": _DST_YAML.format(warehouse=setting).encode("utf-8")}
    for kind in KINDS:
        repo_files[f"schemas/{schema_filename(kind)}"] = render(schema_for(kind)).encode("utf-8")
    return Scaffold(lens, lens_files, repo_files)


def gitignore_with_dst(current: str | None) -> str | None:
    """``.gitignore`` text with a ``.dst/`` line added, or ``None`` when it already ignores it.

    Args:
        current: the file's text, or ``None`` when it does not exist.
    """
    lines = (current or "").splitlines()
    if any(line.strip() in (".dst", ".dst/", "/.dst", "/.dst/") for line in lines):
        return None
    text = current or ""
    if text and not text.endswith("\n"):
        text += "\n"
    return text + GITIGNORE_LINE + "\n"


# ------------------------------------------------------------------ dst init --ci github

WORKFLOWS_DIR = ".github/workflows"
ACTION_PATH = ".github/actions/dst"


@dataclass(frozen=True)
class CiSettings:
    """What the generated workflows need to know of ``dst.yaml``.

    Attributes:
        action: ``OWNER/REPO@REF``: the dst repository and tag (or commit) whose
            composite action the workflows use, or ``./`` for dst's own repository.
        webhooks: the variable names of ``notify:`` (each ``url_env``), in order.
        environments: ``{name: seeded}`` for ``environments:``; ``seeded`` is true
            when that environment's warehouse is a DuckDB file (or the embedded one),
            built from the seeds in every run, false for a server the job must reach.
        seed_default: the default environment reads the embedded warehouse
            (``dst.yaml`` has no ``warehouse:``), so the jobs build it with ``dst seed``.
    """

    action: str
    webhooks: tuple[str, ...] = ()
    environments: dict[str, bool] | None = None
    seed_default: bool = True

    @property
    def uses(self) -> str:
        """The ``uses:`` of the action step: ``OWNER/REPO/.github/actions/dst@REF``."""
        if self.action.startswith("./"):
            return "./" + ACTION_PATH
        repository, _, ref = self.action.partition("@")
        return f"{repository}/{ACTION_PATH}@{ref}"


def seeded_in_ci(url: str | None) -> bool:
    """A warehouse a CI job builds from the seeds: the embedded one or a DuckDB file."""
    return url is None or url.strip().lower().startswith("duckdb:")


def _secrets_env(names: tuple[str, ...], indent: str) -> str:
    lines = [f"{indent}{name}: ${{{{ secrets.{name} }}}}" for name in names]
    return "\n".join(lines) + "\n" if lines else ""


def _check_workflow(ci: CiSettings) -> str:
    return f"""\
# Pull requests: dry-run the lenses a change touches against the serving state
# (annotations, job summary, JUnit). Written by `dst init --ci github`.
# Read-only token and no secrets, so pull requests from forks are checked the same
# way; a check never notifies, so no webhook secret is passed.
name: lens check

on:
  pull_request:

permissions:
  contents: read

jobs:
  check:
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v5
        with:
          # On purpose: `dst ci check` fetches the base and deepens the clone
          # itself until it finds the merge base, or fails with "insufficient history".
          fetch-depth: 1
      - name: dst ci check
        uses: {ci.uses}
        with:
          command: check
          # build the embedded warehouse from the lenses' seeds/ first
          seed: "{str(ci.seed_default).lower()}"
          junit: dst-junit.xml
      - name: Keep the JUnit report
        if: ${{{{ !cancelled() }}}}
        uses: actions/upload-artifact@v6
        with:
          name: dst-junit
          path: dst-junit.xml
          if-no-files-found: ignore
"""


def _apply_workflow(ci: CiSettings) -> str:
    # a server warehouse is reached through the secret (it wins over dst.yaml's URL; unset,
    # dst.yaml's applies); the embedded one is built from the seeds, so it takes none
    reach = () if ci.seed_default else ("DST_WAREHOUSE_URL",)
    hooks = _secrets_env((*reach, *ci.webhooks), "      ")
    env = f"    env:\n{hooks}" if hooks else ""
    return f"""\
# The default branch: apply the lenses for real, then publish refs/dst/* to the
# remote. Every deployment commit has the previous one as parent, so the push is a
# fast-forward; a racing promoter makes it fail (never forced), and a re-run re-plans.
# The push is atomic, like the apply itself. A lens deleted on main is retired: the
# push sends refs/dst/retired/<lens> and deletes the remote's serving ref under a
# lease on the deployment it retired. Written by `dst init --ci github`.
name: lens apply

on:
  push:
    branches: [main]

permissions:
  contents: write

concurrency:
  group: lens-apply
  cancel-in-progress: false

jobs:
  apply:
    if: github.ref_name == github.event.repository.default_branch
    runs-on: ubuntu-latest
    timeout-minutes: 30
{env}    steps:
      - uses: actions/checkout@v5
        with:
          # `dst ci apply` deepens the clone until the commit each lens serves is
          # reachable from HEAD (the rewind check needs it).
          fetch-depth: 1
      - name: dst ci apply
        uses: {ci.uses}
        with:
          command: apply
          seed: "{str(ci.seed_default).lower()}"
      - name: Publish refs/dst (blocked attempts too)
        if: ${{{{ !cancelled() }}}}
        run: dst sync --push
"""


def _promote_workflow(ci: CiSettings) -> str | None:
    envs = ci.environments or {}
    if not envs:
        return None
    options = ", ".join(envs)
    seeded = [name for name, built in envs.items() if built]
    seed = " || ".join(f"inputs.env == '{name}'" for name in seeded) or "false"
    hooks = _secrets_env(("DST_WAREHOUSE_URL", *ci.webhooks), "      ")
    return f"""\
# Promote the default branch's lenses to one environment of dst.yaml, by hand:
# Actions -> "lens promote" -> Run workflow. Written by `dst init --ci github`.
# The job declares `environment:`, so GitHub's protection rules (required reviewers,
# wait timers) decide who may run it; dst never asks. `dst ci apply --env E` refuses
# a lens tree that E's `promote_from` environment does not serve yet.
# An environment whose warehouse is a DuckDB file is built from the seeds in the job;
# any other is reached through dst.yaml's URL or the environment secret
# DST_WAREHOUSE_URL (Settings -> Environments -> E), which wins over it.
name: lens promote

on:
  workflow_dispatch:
    inputs:
      env:
        description: Environment to promote to (a name under dst.yaml environments:).
        required: true
        type: choice
        options: [{options}]

permissions:
  contents: write

concurrency:
  group: lens-promote-${{{{ inputs.env }}}}
  cancel-in-progress: false

jobs:
  promote:
    if: github.ref_name == github.event.repository.default_branch
    runs-on: ubuntu-latest
    timeout-minutes: 30
    environment: ${{{{ inputs.env }}}}
    env:
{hooks}    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 1
      - name: dst ci apply --env
        uses: {ci.uses}
        with:
          command: apply
          env: ${{{{ inputs.env }}}}
          seed: ${{{{ {seed} }}}}
      - name: Publish refs/dst (every environment, blocked attempts too)
        if: ${{{{ !cancelled() }}}}
        run: dst sync --push
"""


def ci_files(ci: CiSettings) -> dict[str, bytes]:
    """The GitHub workflow files ``dst init --ci github`` writes: ``{path: bytes}``.

    ``lens-check.yml`` (pull requests), ``lens-apply.yml`` (the default branch) and,
    when ``dst.yaml`` names environments, ``lens-promote.yml`` (by hand, per
    environment). Each runs the composite action of ``ci.action``, which installs
    the dst beside it, so the repository needs nothing but ``lenses/`` and ``dst.yaml``.
    """
    out = {
        f"{WORKFLOWS_DIR}/lens-check.yml": _check_workflow(ci),
        f"{WORKFLOWS_DIR}/lens-apply.yml": _apply_workflow(ci),
    }
    promote = _promote_workflow(ci)
    if promote is not None:
        out[f"{WORKFLOWS_DIR}/lens-promote.yml"] = promote
    return {path: text.encode("utf-8") for path, text in out.items()}
