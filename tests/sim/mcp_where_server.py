"""A minimal MCP stdio server for the tests (newline-delimited JSON-RPC, no SDK): ``where_am_i``
returns its cwd and ``$SIMFIX_SECRET``, ``boom`` fails with a JSON-RPC error ``-32601 Method not
found``, ``oops`` returns ``isError: true``."""

import json
import os
import sys

TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object", "properties": {}}}
         for n in ("where_am_i", "boom", "oops")]


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        m = json.loads(line)
        if "id" not in m:
            continue
        method, reply = m.get("method"), {"jsonrpc": "2.0", "id": m["id"]}
        if method == "initialize":
            reply["result"] = {"protocolVersion": m["params"].get("protocolVersion", "2025-06-18"),
                               "capabilities": {"tools": {}}, "serverInfo": {"name": "where", "version": "1"}}
        elif method == "tools/list":
            reply["result"] = {"tools": TOOLS}
        elif method == "tools/call" and m["params"]["name"] == "boom":
            reply["error"] = {"code": -32601, "message": "Method not found"}
        elif method == "tools/call" and m["params"]["name"] == "oops":
            reply["result"] = {"content": [{"type": "text", "text": "it broke"}], "isError": True}
        elif method == "tools/call":
            text = f"CWD={os.getcwd()} SECRET={os.environ.get('SIMFIX_SECRET', '<unset>')}"
            reply["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            reply["result"] = {}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pytest's doctest collection imports this file
    main()
