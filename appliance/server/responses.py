"""JSON responses that accept what the library returns (numpy scalars, paths) without a 500."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse


def jsonable(value: Any) -> Any:
    """json.dumps fallback: numpy scalars and arrays become numbers and lists, anything else a string."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (ValueError, TypeError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()
    return str(value)


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=jsonable, separators=(",", ":"))


class ApplianceJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")
