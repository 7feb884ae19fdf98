"""The running server keeps its local vector store current: a thread that applies, every
index.sync_interval_s, what another process (appliance-reindex.service, an admin's `appliance ingest`)
committed to the catalog. Searches also apply it first (Index.reading); this thread makes the server
claim the store as it starts and keeps the first search after a change from paying for it.
Not started with a Chroma server (vectors.url): every process writes that one itself.
"""

from __future__ import annotations

import logging
import threading

from appliance.config import Settings
from appliance.index.index import Index

log = logging.getLogger(__name__)


class IndexSync:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="appliance-index-sync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        interval = self.settings.index.sync_interval_s
        index = Index(self.settings)
        index.serve(self.settings.index.lock_timeout_s)
        last_problem = ""
        try:
            while True:
                try:
                    applied = index.sync()
                    if applied.upserted or applied.deleted:
                        log.info(
                            "applied changes another process indexed: %d vectors written, %d deleted (change %d)",
                            applied.upserted,
                            applied.deleted,
                            applied.seq,
                        )
                    last_problem = ""
                except Exception as exc:  # keep trying: the next round (or a search) may succeed
                    index.serve(self.settings.index.lock_timeout_s)  # a failed claim: wait for it again
                    problem = f"{type(exc).__name__}: {exc}"
                    if problem != last_problem:
                        log.warning("cannot bring the vector store up to date: %s", problem)
                    last_problem = problem
                if self._stop.wait(interval):
                    return
        finally:
            index.close()
