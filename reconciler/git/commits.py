"""Who wrote a commit, when, and its subject line: what ``dst log`` and notifications show."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from reconciler.ids import Oid


@dataclass(frozen=True)
class CommitInfo:
    """A commit's author and subject.

    Attributes:
        oid: the commit.
        author: the author's name.
        email: the author's email.
        time: the author date, in seconds since the epoch.
        subject: the first line of the message.
    """

    oid: Oid
    author: str
    email: str
    time: int
    subject: str

    def record(self) -> dict[str, object]:
        """JSON-ready form: ``{"commit", "author", "email", "time", "subject"}``."""
        return {
            "commit": self.oid,
            "author": self.author,
            "email": self.email,
            "time": self.time,
            "subject": self.subject,
        }


def commit_info(repo: pygit2.Repository, oid: Oid | str | None) -> CommitInfo | None:
    """The author and subject of commit ``oid``; ``None`` when it is absent (a shallow
    clone, a source commit only the remote has) or not a commit."""
    if not oid:
        return None
    try:
        commit = repo.get(str(oid))
    except (ValueError, pygit2.GitError):
        return None
    if not isinstance(commit, pygit2.Commit):
        return None
    subject = commit.message.split("\n", 1)[0].strip()
    author = commit.author
    return CommitInfo(Oid(str(commit.id)), author.name, author.email, int(author.time), subject)
