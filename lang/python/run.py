# The runner of `crucible run --lang py`: runs a program as __main__ under
# the name the user knows it by (its file's name, or <stdin>), and reports
# its result (crucible.result) or its uncaught error on fd 3 as one JSON
# object. It runs inside the program's own process: it is a convenience,
# not a boundary.
#
# run.py -- NAME: the program is main.py, beside it.
# run.py --warm: a warm jail's worker; it imports all it needs, then waits
# for its job on stdin ({"source": base64, "name": NAME}, sent when the
# work arrives; a newline on fd 3 first says it waits) and runs it the same
# way.
import builtins
import gc
import json
import linecache
import os
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN = os.path.join(HERE, "main.py")
sys.path.insert(0, os.path.join(HERE, "lib"))
# The server's skills, when it has some: `import NAME` finds /skills/NAME.py.
if os.path.isdir("/skills"):
    sys.path.append("/skills")
import crucible  # noqa: E402

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
    # Only the program's own frames, not this runner's.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == name]
    stack = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
    stack += "".join(traceback.format_exception_only(type(e), e))
    return {"name": type(e).__name__, "message": str(e), "stack": stack}


def run(source, name):
    # The code is compiled under the program's name, so that every
    # traceback and warning names it so (the user's own prints too);
    # linecache holds its lines as it would a file's of that name.
    linecache.cache[name] = (len(source), None, source.decode("utf-8", "replace").splitlines(True), name)
    main = types.ModuleType("__main__")
    main.__file__, main.__builtins__ = MAIN, builtins
    sys.modules["__main__"] = main
    sys.argv = [name]
    exec(compile(source, name, "exec"), main.__dict__)


def main(source, name):
    code = 0
    try:
        run(source, name)
    except SystemExit as e:
        code = e.code
    except BaseException as e:
        err = error(e, name)
        sys.stderr.write(err["stack"])
        report(json.dumps({"error": err}))
        return 1
    try:
        payload = json.dumps({"result": crucible.result})
    except (TypeError, ValueError) as e:
        err = {"name": "TypeError", "message": "crucible.result cannot be encoded as JSON: %s" % e}
        sys.stderr.write(err["message"] + "\n")
        report(json.dumps({"error": err}))
        return 1
    report(payload)
    return code


def job():
    import base64  # here: the cold runner has no use for it

    # Ready: the pool may hand this jail work now (lang.Warm.SaysReady).
    try:
        os.write(3, b"\n")
    except OSError:
        pass  # no result channel: run by hand
    # Exactly the program's bytes (base64): a source in another encoding,
    # declared by a coding comment, compiles as it would from a file.
    try:
        j = json.loads(sys.stdin.buffer.read())
        # The workspace may have been bound over our working directory
        # while we waited (lang.Warm): enter it.
        os.chdir(os.getcwd())
        # The client's own skills may have been laid over /skills too:
        # forget what was found there before.
        sys.path_importer_cache.pop("/skills", None)
        return base64.b64decode(j["source"], validate=True), str(j["name"])
    except Exception as e:  # whatever the job was, the worker reports it
        err = {"name": "CrucibleError", "message": "reading the job: %s" % e}
        sys.stderr.write(err["message"] + "\n")
        report(json.dumps({"error": err}))
        sys.exit(1)


if sys.argv[1:] == ["--warm"]:
    sys.exit(main(*job()))
with open(MAIN, "rb") as f:
    sys.exit(main(f.read(), sys.argv[-1]))
