"""One error root for everything dst raises on purpose.

The tree, with the exit code each class carries (``exit_code``)::

    DstError                      2  any expected failure; carries a "what to do next"
    ├── InputError                2  bad lens files, bad flags, unsafe SQL
    │   ├── LensLoadError         2  a lens file failed to parse or validate (file, line)
    │   ├── LensLoadErrors        2  several lens files failed to load; each one is reported
    │   ├── UnsafeSqlError        2  SQL that is not exactly one read-only query
    │   └── UsageError            2  a flag, revision or lens name that does not resolve
    ├── StateError                2  serving state that cannot be read as written
    │   ├── RefConflict           1  a compare-and-swap lost: the ref moved since the plan
    │   │                            (another promoter won; re-plan, like a blocked gate)
    │   └── StaleLock             2  a ref lock file a killed process left (named, with its age)
    └── WarehouseError            2  the warehouse could not be reached or queried
        └── PrivilegedWarehouse   2  answer SQL would run on a login that can write

Exit codes of the ``dst`` command line (STYLE §4, DESIGN §6): 0 ok or nothing to
do; 1 gate blocked, stood down or divergence; 2 usage, configuration or bad input;
3 unexpected (the traceback is written to a log file whose path is printed); 130
interrupted. The classes above carry 1 and 2; 0 and 1 for a run that completed
come from its report, 3 and 130 from :mod:`reconciler.cli.boundary`, the one
place that turns errors into exit codes. Everything else raises these with
enough context (file, line, ref, expected/actual oid) for the message to say
what happened and what to do next.
"""

from __future__ import annotations


class DstError(Exception):
    """Root of every error dst raises on purpose.

    Args:
        message: what went wrong, naming the file/ref/lens involved.
        fix: what the user should do next; printed after the message.

    Attributes:
        exit_code: the ``dst`` exit code this error ends a command with (class attribute;
            see the tree above).
    """

    exit_code = 2

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def render(self) -> str:
        """The message and, when known, the fix, as one or two lines."""
        return self.message if not self.fix else f"{self.message}\n  fix: {self.fix}"


class InputError(DstError):
    """Bad input from the user: lens files, flags, SQL."""

    exit_code = 2


class LensLoadError(InputError):
    """A lens file that does not parse or validate.

    Args:
        path: repository-relative path of the file (``lenses/sales/metrics/x.yaml``).
        line: 1-based line of the offending node, when known.
        message: what is wrong there.
        fix: how to repair it.
    """

    def __init__(
        self, path: str, message: str, *, line: int | None = None, fix: str | None = None
    ) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}", fix=fix)
        self.path = path
        self.line = line


class LensLoadErrors(InputError):
    """Several lenses failed to load: every error is kept, so every file can be pointed at.

    Args:
        errors: the individual errors, in lens order.

    Attributes:
        errors: the same, as a tuple.
    """

    def __init__(self, errors: tuple[LensLoadError, ...]) -> None:
        self.errors = errors
        lines = [f"{len(errors)} lens files do not load:", *(e.render() for e in errors)]
        super().__init__("\n".join(lines), fix="fix each file named above")


class UnsafeSqlError(InputError):
    """SQL that the read-only guard refuses (writes, several statements, commands)."""


class UsageError(InputError):
    """A command-line flag, revision or lens name that does not resolve."""


class StateError(DstError):
    """Serving state in ``refs/dst/`` that cannot be read or is of an unknown schema."""

    exit_code = 2


class RefConflict(StateError):
    """A compare-and-swap ref update lost the race.

    Args:
        ref: the full ref name.
        expected: the oid the plan saw (``None`` when it saw no ref).
        actual: the oid found under the lock (``None`` when the ref is gone).
    """

    exit_code = 1

    def __init__(self, ref: str, expected: str | None, actual: str | None) -> None:
        super().__init__(
            f"{ref} moved since the plan (expected {expected or 'no ref'}, "
            f"found {actual or 'no ref'})",
            fix="another promoter won; re-plan and apply again",
        )
        self.ref = ref
        self.expected = expected
        self.actual = actual


class StaleLock(StateError):
    """A ref lock file that outlived a bounded wait: most likely left by a killed process.

    dst never deletes it: only the user can know that no other process is writing.

    Args:
        path: the lock file (``.git/refs/dst/serving/<lens>.lock``, ``.git/packed-refs.lock``).
        age_s: seconds since the file was last modified.
    """

    def __init__(self, path: str, age_s: float) -> None:
        super().__init__(
            f"{path} is {age_s:.0f} s old and still there: a dst or git process was killed "
            f"while updating refs, or one is still running",
            fix=f"if no dst or git process is running in this repository, remove it "
            f"(rm {path}) and run the command again",
        )
        self.path = path
        self.age_s = age_s


class WarehouseError(DstError):
    """The warehouse could not be reached, or a statement failed to execute."""

    exit_code = 2


class PrivilegedWarehouse(WarehouseError):
    """Answer SQL would run on a connection that could write (a superuser, write grants,
    a DuckDB file open read-write) and its environment does not set
    ``allow_privileged: true``. A configuration error: the gate never stands down on it."""

    exit_code = 2
