"""Optional filters applied inside both retrievers: a path prefix and document types."""

from __future__ import annotations

from dataclasses import dataclass

DOC_TYPES = ("md", "txt", "html", "pdf", "docx", "image")


@dataclass(frozen=True)
class Filters:
    path_prefix: str | None = None  # display path prefix, e.g. "docs_corpus/" or "runbooks/gitlab"
    doc_types: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.path_prefix) or bool(self.doc_types)

    def sql(self, document_alias: str = "d") -> tuple[str, list[str]]:
        """A WHERE fragment (starting with AND) over the documents table, and its parameters."""
        clauses: list[str] = []
        params: list[str] = []
        if self.path_prefix:
            # substr comparison, not LIKE: a prefix may hold % or _ that LIKE would treat as wildcards.
            clauses.append(f"substr({document_alias}.path, 1, ?) = ?")
            params.extend([str(len(self.path_prefix)), self.path_prefix])
        if self.doc_types:
            clauses.append(f"{document_alias}.type IN ({','.join('?' * len(self.doc_types))})")
            params.extend(self.doc_types)
        return ("".join(f" AND {clause}" for clause in clauses), params)

    def admits(self, path: str, doc_type: str) -> bool:
        if self.path_prefix and not path.startswith(self.path_prefix):
            return False
        return not self.doc_types or doc_type in self.doc_types


NO_FILTERS = Filters()
