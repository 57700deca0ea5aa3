"""Crucible's module for programs run by `crucible run --lang py`.

Set `crucible.result` to any value JSON can encode; it becomes the
execution's result.

`crucible.tools` calls the tools of the configured MCP servers, through
the execution's tools channel (the fd that CRUCIBLE_TOOLS_FD names):
`tools.<server>.<tool>(**args)` (the tool's name made an identifier as in
`crucible tools --ts`), `tools.call(server, tool, args)`, `tools.list()`,
`tools.resource(server, uri)`; `tools.apis(query=None)` lists the
configured HTTP APIs (with a query, those it matches and the operations
found). Each call blocks until its answer; calls
from several threads are in flight at once. A refused or failed call
raises ToolError, whose `kind` is "tool", "limit" or "error".
"""

import os

# The channel is a plain file on its descriptor, its reader a bare thread
# and its waits locks, all of the interpreter's own: socket and threading
# would load ~10 ms of CPU of modules (selectors, an enum of every socket
# constant), json ~18 (re, enum), more than the interpreter's own start.
# json loads with the first call.
from _thread import allocate_lock, start_new_thread

result = None


class ToolError(Exception):
    """A tool call that failed or was refused; kind says which way."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class _Channel:
    def __init__(self):
        self._lock = allocate_lock()  # guards the fields below
        self._file = None
        self._seq = 0
        self._waiting = {}  # id -> [a held lock, the answer]
        self._end = None  # why the channel ended, once it has
        self._names = None  # server -> {python name: tool name}
        self._listing = allocate_lock()  # held while _names is listed

    def _open(self):
        # With the lock held.
        if self._file is None:
            fd = os.environ.get("CRUCIBLE_TOOLS_FD")
            if not fd:
                raise ToolError("error", "no tools are configured: the configuration of this execution has no servers")
            os.set_blocking(int(fd), True)  # as a socket object would make it
            self._file = open(int(fd), "rb")  # read by _read; written with os.write
            start_new_thread(self._read, ())  # ends with the interpreter, like a daemon thread
        return self._file

    def _read(self):
        import json

        f = self._file
        end = "the tools channel was closed"
        try:
            for line in f:
                a = json.loads(line)
                with self._lock:
                    w = self._waiting.pop(a.get("id"), None)
                if w:
                    w[1] = a
                    w[0].release()
        except (OSError, ValueError) as e:
            end = "the tools channel failed: %s" % e
        with self._lock:
            self._end = end
            for w in self._waiting.values():
                w[0].release()
            self._waiting.clear()

    def request(self, req):
        import json

        line = json.dumps(req, separators=(",", ":"))
        # The caller waits on a held lock, which _read releases with the
        # answer, or when the channel ends.
        w = [allocate_lock(), None]
        w[0].acquire()
        with self._lock:
            f = self._open()
            if self._end:
                raise ToolError("error", self._end)
            self._seq += 1
            ident = self._seq
            self._waiting[ident] = w
            data = memoryview(('{"id":%d,%s\n' % (ident, line[1:])).encode())
            while data:
                data = data[os.write(f.fileno(), data):]
        w[0].acquire()
        a = w[1]
        if a is None:
            raise ToolError("error", self._end)
        if "error" in a:
            raise ToolError(a["error"].get("kind", "error"), a["error"].get("message", ""))
        return a.get("result")

    def name(self, server, name):
        # Listed once, whatever the threads: each listing after the
        # first counts against the execution's calls.
        with self._listing:
            if self._names is None:
                names = {}
                for t in self.request({"method": "list"}):
                    names.setdefault(t["server"], {})[t.get("js_name", t["name"])] = t["name"]
                self._names = names
        return self._names.get(server, {}).get(name, name)


_channel = _Channel()


class _Server:
    def __init__(self, server):
        self._server = server

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda **args: _channel.request(
            {"method": "call", "server": self._server, "tool": _channel.name(self._server, name), "args": args})


class _Tools:
    """The tools of the configured servers: see the module's doc."""

    def call(self, server, tool, args=None):
        return _channel.request({"method": "call", "server": server, "tool": tool, "args": args or {}})

    def list(self):
        return _channel.request({"method": "list"})

    def resource(self, server, uri):
        return _channel.request({"method": "resource", "server": server, "uri": uri})

    def apis(self, query=None):
        if not os.environ.get("CRUCIBLE_TOOLS_FD"):
            return []  # no channel: neither tools nor APIs
        req = {"method": "apis"}
        if query is not None:
            req["query"] = str(query)
        return _channel.request(req)

    def __getattr__(self, server):
        if server.startswith("__"):
            raise AttributeError(server)
        return _Server(server)


tools = _Tools()
