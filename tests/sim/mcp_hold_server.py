"""A minimal MCP stdio server for the tests (newline-delimited JSON-RPC, no SDK): ``hold``
writes ``held`` in its cwd, then answers only once a file ``release`` appears there (a call that
takes as long as the test wants); ``where_am_i`` answers at once."""

import json
import os
import sys
import time

TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object", "properties": {}}}
         for n in ("hold", "where_am_i")]


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
                               "capabilities": {"tools": {}}, "serverInfo": {"name": "hold", "version": "1"}}
        elif method == "tools/list":
            reply["result"] = {"tools": TOOLS}
        elif method == "tools/call":
            if m["params"]["name"] == "hold":
                with open("held", "w") as f:
                    f.write("held")
                while not os.path.exists("release"):
                    time.sleep(0.05)
            reply["result"] = {"content": [{"type": "text", "text": "done"}], "isError": False}
        else:
            reply["result"] = {}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pytest's doctest collection imports this file
    main()
