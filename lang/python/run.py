# The runner of `crucible run --lang py`: runs main.py, beside it, as
# __main__ under the name the user knows the program by (argv[1]: its
# file's name, or <stdin>), and reports its result (crucible.result) or its
# uncaught error on fd 3 as one JSON object. It runs inside the program's
# own process: it is a convenience, not a boundary.
import builtins
import json
import linecache
import os
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN = os.path.join(HERE, "main.py")
NAME = sys.argv[1]
sys.path.insert(0, os.path.join(HERE, "lib"))
# The server's skills, when it has some: `import NAME` finds /skills/NAME.py.
if os.path.isdir("/skills"):
    sys.path.append("/skills")
import crucible  # noqa: E402


def report(text):
    try:
        with os.fdopen(3, "w") as f:
            f.write(text)
    except OSError:
        pass  # no result channel (or the program closed it)


def error(e):
    # Only the program's own frames, not this runner's.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == NAME]
    stack = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) if frames else ""
    stack += "".join(traceback.format_exception_only(type(e), e))
    return {"name": type(e).__name__, "message": str(e), "stack": stack}


def run():
    with open(MAIN, "rb") as f:
        source = f.read()
    # The code is compiled under the program's name, so that every
    # traceback and warning names it so (the user's own prints too);
    # linecache holds its lines as it would a file's of that name.
    linecache.cache[NAME] = (len(source), None, source.decode("utf-8", "replace").splitlines(True), NAME)
    main = types.ModuleType("__main__")
    main.__file__, main.__builtins__ = MAIN, builtins
    sys.modules["__main__"] = main
    sys.argv = [NAME]
    exec(compile(source, NAME, "exec"), main.__dict__)


def main():
    code = 0
    try:
        run()
    except SystemExit as e:
        code = e.code
    except BaseException as e:
        err = error(e)
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


sys.exit(main())
