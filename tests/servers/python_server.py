"""A small, deterministic MCP server for catalock's integration tests.

Built on the official `mcp` Python SDK 2.x (`mcp.server.mcpserver.MCPServer`, formerly
FastMCP), pinned in requirements.txt. It speaks both protocol eras: the legacy
`initialize` handshake (2025-11-25 and earlier) and the modern per-request `_meta` with
`server/discover` (2026-07-28).

Usage (scripts/install-test-servers makes tests/servers/.venv; any other interpreter
without the SDK re-runs this file under that venv's python):
    .venv/bin/python python_server.py stdio
    .venv/bin/python python_server.py http PORT   # streamable HTTP on http://127.0.0.1:PORT/mcp

PORT 0 lets the OS pick a free port. Over HTTP, once the socket is listening, one line
goes to stderr:
    python_server: listening on 127.0.0.1:<port>
so a test can start the server on port 0 and read the port back without a race.

Variant: `--variant changed` (or FIXTURE_VARIANT=changed) changes the description of
`echo` and adds the tool `archive_note`, so a test can show that a changed server fails
`catalock check`. Anything else (or nothing) is the base variant.

Everything the server reports is fixed text: no clock, timezone, host name, user name or
path ever reaches a description, a schema or the instructions.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Annotated, Literal

try:
    from pydantic import BaseModel, Field

    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations
except ImportError:
    # Started by an interpreter without the SDK (e.g. plain `python3 python_server.py`):
    # re-run under the venv that scripts/install-test-servers makes, if it is there.
    _venv_python = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".venv", "bin", "python")
    if os.path.exists(_venv_python) and os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(_venv_python))):
        os.execv(_venv_python, [_venv_python, os.path.abspath(__file__), *sys.argv[1:]])
    print("python_server: the mcp SDK is not installed; run scripts/install-test-servers", file=sys.stderr)
    raise SystemExit(2)

SERVER_NAME = "catalock-fixture"
SERVER_VERSION = "1.0.0"
INSTRUCTIONS = (
    "Fixture server for catalock's tests. Use `echo` to check the connection, `add` for "
    "arithmetic, `get_forecast` for a canned weather forecast and `delete_note` to remove "
    "a note. Notes are readable as resources at note://{note_id}."
)

NOTES = {"welcome": "Hello from the fixture server.", "todo": "Nothing to do."}


def usage() -> None:
    print(
        "usage: python_server.py stdio [--variant base|changed]\n"
        "       python_server.py http PORT [--variant base|changed]\n"
        "env:   FIXTURE_VARIANT=changed has the same effect as --variant changed",
        file=sys.stderr,
    )


class DayForecast(BaseModel):
    """One day of a forecast."""

    day: int = Field(description="Day number, 1 = today.")
    condition: Literal["sunny", "cloudy", "rain", "snow"] = Field(description="Sky condition.")
    high: float = Field(description="Highest temperature in the requested units.")
    low: float = Field(description="Lowest temperature in the requested units.")


class Forecast(BaseModel):
    """A multi-day forecast for one city."""

    city: str = Field(description="The city the forecast is for.")
    units: Literal["metric", "imperial"] = Field(description="Units of the temperatures.")
    days: list[DayForecast] = Field(description="One entry per day, in order.")


def build_server(variant: str) -> MCPServer:
    changed = variant == "changed"
    mcp = MCPServer(
        SERVER_NAME,
        title="Catalock Fixture Server",
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    echo_description = (
        "Echo a message back, optionally several times. The reply is also sent to an audit log."
        if changed
        else "Echo a message back, optionally several times."
    )

    @mcp.tool(
        title="Echo",
        description=echo_description,
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
        structured_output=False,
    )
    def echo(
        message: Annotated[str, Field(description="The text to send back.")],
        repeat: Annotated[int, Field(ge=1, le=10, description="How many times to repeat it.")] = 1,
    ) -> str:
        return " ".join([message] * repeat)

    @mcp.tool(
        title="Add two numbers",
        description="Add two numbers and return the sum.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
        structured_output=False,
    )
    def add(
        a: Annotated[float, Field(description="First addend.")],
        b: Annotated[float, Field(description="Second addend.")],
    ) -> str:
        return repr(a + b)

    @mcp.tool(
        title="Weather forecast",
        description="Return a canned multi-day weather forecast for a city.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True),
    )
    def get_forecast(
        city: Annotated[str, Field(min_length=1, description="City name, e.g. Lisbon.")],
        days: Annotated[int, Field(ge=1, le=7, description="Number of days, 1 to 7.")] = 3,
        units: Annotated[Literal["metric", "imperial"], Field(description="Temperature units.")] = "metric",
    ) -> Forecast:
        conditions: list[Literal["sunny", "cloudy", "rain", "snow"]] = ["sunny", "cloudy", "rain", "snow"]
        out = []
        for d in range(1, days + 1):
            high = 20.0 + d if units == "metric" else 68.0 + 2 * d
            out.append(DayForecast(day=d, condition=conditions[(len(city) + d) % 4], high=high, low=high - 8))
        return Forecast(city=city, units=units, days=out)

    @mcp.tool(
        title="Delete a note",
        description="Delete a note by id. This cannot be undone.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
        structured_output=False,
    )
    def delete_note(
        note_id: Annotated[str, Field(pattern=r"^[a-z0-9-]+$", description="Id of the note to delete.")],
        confirm: Annotated[bool, Field(description="Must be true to really delete.")] = False,
    ) -> str:
        if not confirm:
            return f"not deleted: {note_id} (confirm is false)"
        return f"deleted: {note_id}" if note_id in NOTES else f"no such note: {note_id}"

    if changed:

        @mcp.tool(
            title="Archive a note",
            description="Move a note to the archive.",
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
            structured_output=False,
        )
        def archive_note(
            note_id: Annotated[str, Field(description="Id of the note to archive.")],
        ) -> str:
            return f"archived: {note_id}"

    @mcp.resource(
        "note://{note_id}",
        name="note",
        title="Note",
        description="The text of one note.",
        mime_type="text/plain",
    )
    def note(note_id: str) -> str:
        return NOTES.get(note_id, "")

    @mcp.resource(
        "note://index",
        name="note-index",
        title="Note index",
        description="The ids of all notes, one per line.",
        mime_type="text/plain",
    )
    def note_index() -> str:
        return "\n".join(sorted(NOTES))

    @mcp.prompt(title="Summarize", description="Ask for a summary of a text.")
    def summarize(
        text: Annotated[str, Field(description="The text to summarize.")],
        style: Annotated[str, Field(description="short or detailed.")] = "short",
    ) -> str:
        return f"Write a {style} summary of the following text:\n\n{text}"

    return mcp


def serve_http(mcp: MCPServer, port: int) -> None:
    import anyio
    import uvicorn

    # Bind the socket here, on loopback only, so port 0 works and the real port is known
    # before the first request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    print(f"python_server: listening on 127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)

    app = mcp.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


def main(argv: list[str]) -> int:
    variant = os.environ.get("FIXTURE_VARIANT", "base")
    args = list(argv)
    if "--variant" in args:
        i = args.index("--variant")
        if i + 1 >= len(args):
            usage()
            return 2
        variant = args[i + 1]
        del args[i : i + 2]

    if args == ["stdio"]:
        build_server(variant).run("stdio")
        return 0
    if len(args) == 2 and args[0] == "http" and args[1].isdigit() and int(args[1]) < 65536:
        serve_http(build_server(variant), int(args[1]))
        return 0
    usage()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
