# The runner of `crucible run --lang py`: runs /crucible/python/main.py as
# __main__ and reports its result (crucible.result) or its uncaught error on
# fd 3 as one JSON object. It runs inside the program's own process: it is a
# convenience, not a boundary.
import json
import os
import runpy
import sys
import traceback

sys.path.insert(0, "/crucible/python/lib")
import crucible  # noqa: E402

MAIN = "/crucible/python/main.py"


def report(text):
    try:
        with os.fdopen(3, "w") as f:
            f.write(text)
    except OSError:
        pass  # no result channel (or the program closed it)


def error(e):
    # Only the program's own frames: not this runner's, not runpy's.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == MAIN]
    stack = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    stack += "".join(traceback.format_exception_only(type(e), e))
    return {"name": type(e).__name__, "message": str(e), "stack": stack}


def main():
    sys.argv = [MAIN]
    code = 0
    try:
        runpy.run_path(MAIN, run_name="__main__")
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
