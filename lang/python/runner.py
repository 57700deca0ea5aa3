# The runner of `crucible run --lang py`, the module crucible_runner that
# run.py starts: runs a program as __main__ under the name the user knows
# it by (its file's name, or <stdin>), and reports its result
# (crucible.result) or its uncaught error on fd 3 as one JSON object. It
# runs inside the program's own process: it is a convenience, not a
# boundary.
#
# run.py -- NAME: the program is main.py, beside run.py.
# run.py --warm: a warm jail's worker; it readies itself, then waits for
# its job on stdin (NAME, a newline, and the program's bytes, sent when the
# work arrives; a newline on fd 3 first says it waits) and runs it the same
# way.
#
# It is a module, not the script itself, for its bytecode: the interpreter
# compiles the script it runs from source each time, but imports a module
# from the bytecode in __pycache__ when there is some, and a pool puts
# there what the operator's interpreter compiled once (python.go's
# compileScript). Compiling this file was about a quarter of a worker's CPU.
#
# It imports nothing the interpreter has not loaded at its start: json,
# linecache and traceback (each pulls in re and enum), socket and threading
# would cost every execution more CPU than the interpreter's own start (18
# ms for `python3 -I -c pass` on the developers' VM, 47 with them). The
# first three load when they are needed: by a traceback, a result that is
# not plain (dumps), the first tool call (json), or the program itself; the
# tools channel needs neither socket nor threading (crucible.py). Nor does
# the interpreter import site at its start (-S): see Site, below.
import builtins
import gc
import os
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # run.py's
MAIN = os.path.join(HERE, "main.py")
# The server's skills, when it has some: `import NAME` finds /skills/NAME.py.
SKILLS = "/skills"
if os.path.isdir(SKILLS):
    sys.path.append(SKILLS)
import crucible  # noqa: E402


class Site:
    """What the site module does at an interpreter's start, done when the
    program first needs it: site-packages on sys.path and their .pth
    files, sitecustomize, and the builtins exit, quit, help, copyright,
    credits and license. The interpreter starts with -S: for a program that
    uses none of it, site was ~14 % of a worker's CPU here. It runs on
    the first import of a name that nothing finds (a package installed in
    site-packages; an optional one that is not there costs what site did
    before), of a module that lists what is installed (First.LISTS), or
    on the first use of one of those builtins."""

    done = False

    @classmethod
    def install(cls):
        sys.meta_path.insert(0, First())
        sys.meta_path.append(Last())
        for name in ("exit", "quit", "help", "copyright", "credits", "license"):
            setattr(builtins, name, Builtin(name))

    @classmethod
    def run(cls):
        if not cls.done:
            cls.done = True
            import site

            site.main()
            # Site-packages before the skills, as when site ran first.
            if SKILLS in sys.path:
                sys.path.remove(SKILLS)
                sys.path.append(SKILLS)


class First:
    """Before every finder: the modules that list what is installed."""

    LISTS = ("importlib.metadata", "importlib_metadata", "pkgutil", "pkg_resources")

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.LISTS:
            Site.run()
        return None


class Last:
    """After every finder: a name none of them found, looked for again
    once site has run, by every finder (its .pth files may add some)."""

    def find_spec(self, fullname, path=None, target=None):
        if path is not None or Site.done:
            return None
        Site.run()
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                return spec
        return None


class Builtin:
    """One of site's builtins, until site has run and put its own."""

    def __init__(self, name):
        self.name = name

    def real(self):
        Site.run()
        b = getattr(builtins, self.name, self)
        if b is self:
            raise NameError("name '%s' is not defined" % self.name)
        return b

    def __call__(self, *args, **kwargs):
        return self.real()(*args, **kwargs)

    def __repr__(self):
        return repr(self.real())


Site.install()

# What is here now is the runner's, and lives until the end: the collector
# need not look at it again, not even at the exit, whose last collections
# would otherwise take most of a warm execution's time (3 ms of 5 here).
# The program's own objects are collected as they would be.
gc.freeze()


def report(text):
    try:
        with os.fdopen(3, "w") as f:
            f.write(text)
    except OSError:
        pass  # no result channel (or the program closed it)


def error(e, name):
    import traceback

    # Only the program's own frames, not this runner's.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == name]
    stack = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
    stack += "".join(traceback.format_exception_only(type(e), e))
    return {"name": type(e).__name__, "message": text(e), "stack": stack}


def text(e):
    # As traceback says it: the program's exception may refuse to.
    try:
        return str(e)
    except BaseException:
        return "<exception str() failed>"


class Lines:
    """Puts the program's lines in linecache, which holds them as it would
    a file's of its name, as soon as linecache is loaded: for a traceback or
    a warning, the runner's or the program's own. Until then it waits on
    sys.meta_path for linecache's import, to run after its loader."""

    def __init__(self, name, source):
        self.name = name
        self.entry = (len(source), None, source.decode("utf-8", "replace").splitlines(True), name)

    def install(self):
        if "linecache" in sys.modules:
            self.put(sys.modules["linecache"])
        else:
            sys.meta_path.insert(0, self)

    def put(self, linecache):
        linecache.cache[self.name] = self.entry

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "linecache":
            return None
        if self in sys.meta_path:  # the program may have moved it
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                spec.loader = Then(spec.loader, self.put)
                return spec
        return None


class Then:
    """A module's loader, and what to do once it has run the module."""

    def __init__(self, loader, then):
        self.loader, self.then = loader, then

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name):
        return getattr(self.loader, name)


def run(source, name):
    # The code is compiled under the program's name, so that every
    # traceback and warning names it so (the user's own prints too).
    Lines(name, source).install()
    main = type(sys)("__main__")
    main.__file__, main.__builtins__ = MAIN, builtins
    sys.modules["__main__"] = main
    sys.argv = [name]
    exec(compile(source, name, "exec"), main.__dict__)


class Escapes(dict):
    """How the json module writes each character of a string (str.translate's
    table): printable ASCII as itself, but the quote and the backslash;
    every other character as an escape, \\uXXXX past ASCII (two, a
    surrogate pair, past U+FFFF), found on first use."""

    def __missing__(self, c):
        if c > 0xFFFF:
            e = "\\u%04x\\u%04x" % (0xD800 | (c - 0x10000) >> 10, 0xDC00 | (c - 0x10000) & 0x3FF)
        else:
            e = "\\u%04x" % c
        self[c] = e
        return e


ESCAPES = Escapes({c: chr(c) for c in range(0x20, 0x7F)})
ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord("\b"): "\\b", ord("\f"): "\\f"})


def dumps(value):
    """json.dumps(value, allow_nan=False), as the json module writes it,
    written here (encode) where it can be, without loading that module."""
    if "json" not in sys.modules:
        text = encode(value)
        if text is not None:
            return text
    import json

    # NaN and the infinities are not JSON, though the module writes them.
    return json.dumps(value, allow_nan=False)


def encode(value):
    """What the json module writes for a plain value (of exactly the types
    None, bool, int, finite float, str, list, tuple and dict with str keys,
    nested a few deep, not too many, no string too long), or None for any
    other. Loading that module costs a worker more than its interpreter's
    start."""
    out = []
    try:
        if plain(value, out, 0, [0]):
            return "".join(out)
    except ValueError:
        pass  # an int too long for str(): the json module says so
    return None


def plain(v, out, depth, count):
    count[0] += 1
    if depth > 32 or count[0] > 4096:
        return False
    t = type(v)
    if v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(int.__repr__(v))
    elif t is float:
        if v != v or v in (float("inf"), float("-inf")):
            return False
        out.append(float.__repr__(v))
    elif t is str:
        if len(v) > 1 << 16:
            return False  # the json module's encoder, in C, is faster
        out.append('"' + v.translate(ESCAPES) + '"')
    elif t is list or t is tuple:
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(", ")
            if not plain(x, out, depth + 1, count):
                return False
        out.append("]")
    elif t is dict:
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(", ")
            if type(k) is not str or not plain(k, out, depth + 1, count):
                return False
            out.append(": ")
            if not plain(x, out, depth + 1, count):
                return False
        out.append("}")
    else:
        return False
    return True


def main(source, name):
    code = 0
    try:
        run(source, name)
    except SystemExit as e:
        code = e.code
    except BaseException as e:
        err = error(e, name)
        sys.stderr.write(err["stack"])
        report(dumps({"error": err}))
        return 1
    try:
        payload = dumps({"result": crucible.result})
    except (TypeError, ValueError) as e:
        err = {"name": "TypeError", "message": "crucible.result cannot be encoded as JSON: %s" % e}
        sys.stderr.write(err["message"] + "\n")
        report(dumps({"error": err}))
        return 1
    report(payload)
    return code


def job():
    # The interpreter's first compile in a process sets its compiler up
    # (~1.5 ms here): with this runner's bytecode ready, the program's
    # would be the first. Done now, before the job, not on its way.
    compile("0", "<warm>", "exec")
    # Ready: the pool may hand this jail work now (lang.Warm.SaysReady).
    try:
        os.write(3, b"\n")
    except OSError:
        pass  # no result channel: run by hand
    # The name, then exactly the program's bytes: a source in another
    # encoding, declared by a coding comment, compiles as it would from a
    # file.
    try:
        name, newline, source = sys.stdin.buffer.read().partition(b"\n")
        # Taken: nothing of the program has run (lang.TakenMark).
        try:
            os.write(3, b"\n")
        except OSError:
            pass
        if not newline or not name:
            raise ValueError("no name and program")
        # The workspace may have been bound over our working directory
        # while we waited (lang.Warm): enter it.
        os.chdir(os.getcwd())
        # The client's own skills may have been laid over /skills too:
        # forget what was found there before.
        sys.path_importer_cache.pop(SKILLS, None)
        return source, name.decode("utf-8", "replace")
    except Exception as e:  # whatever the job was, the worker reports it
        err = {"name": "CrucibleError", "message": "reading the job: %s" % e}
        sys.stderr.write(err["message"] + "\n")
        report(dumps({"error": err}))
        sys.exit(1)


def start():
    if sys.argv[1:] == ["--warm"]:
        sys.exit(main(*job()))
    with open(MAIN, "rb") as f:
        sys.exit(main(f.read(), sys.argv[-1]))
