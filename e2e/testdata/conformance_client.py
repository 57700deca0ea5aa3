"""The MCP conformance suite's client under test: Crucible.

The suite runs `python3 conformance_client.py SERVER_URL` with
MCP_CONFORMANCE_SCENARIO (and, for some, MCP_CONFORMANCE_CONTEXT) set.
This writes a crucible.yaml whose server conf is SERVER_URL, logs in to it
with `crucible login` where the scenario is an auth one ($BROWSER is this
script again, with --browse: it follows the authorization server's
redirects to crucible's callback, as a browser would), then lists its
tools with `crucible tools`, and calls one where the scenario wants a call.
CRUCIBLE (the command line of crucible) and WORKDIR (a directory of its
own) come from the test.
"""
import json
import os
import shlex
import subprocess
import sys
import urllib.request


def browse(url):
    # Follows redirects (the authorization server's 302 to the callback on
    # 127.0.0.1); the callback's answer ends it.
    with urllib.request.urlopen(url, timeout=30) as r:
        r.read(1 << 16)


def main():
    if sys.argv[1] == "--browse":
        browse(sys.argv[2])
        return 0
    url = sys.argv[1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    work = os.environ["WORKDIR"]
    crucible = shlex.split(os.environ["CRUCIBLE"])
    auth = scenario.startswith("auth/")
    env = dict(os.environ, CRUCIBLE_STATE_DIR=os.path.join(work, "state"),
               BROWSER="%s %s --browse" % (sys.executable, os.path.abspath(__file__)))
    oauth = {}
    if scenario == "auth/basic-cimd":
        oauth["client_id"] = "https://conformance-test.local/client-metadata.json"
    if "client_id" in context:
        oauth["client_id"] = context["client_id"]
    if "client_secret" in context:
        env["CONF_CLIENT_SECRET"] = context["client_secret"]
        oauth["client_secret"] = {"from": "env:CONF_CLIENT_SECRET"}
    if scenario.startswith("auth/client-credentials"):
        oauth["grant"] = "client_credentials"
    server = {"url": url}
    if auth:
        server["oauth"] = oauth
    cfg = os.path.join(work, "crucible.yaml")
    with open(cfg, "w") as f:
        json.dump({"servers": {"conf": server}}, f)  # JSON is YAML
    steps = []
    if auth:
        steps.append(["login", "--config", cfg, "--timeout", "60s", "conf"])
    steps.append(["tools", "--config", cfg])
    if scenario == "tools_call":
        prog = os.path.join(work, "call.js")
        with open(prog, "w") as f:
            f.write("return await tools.conf.add_numbers({a: 2, b: 3});\n")
        steps.append(["run", "--config", cfg, prog])
    for s in steps:
        r = subprocess.run(crucible + s, env=env, timeout=120)
        if r.returncode != 0:
            return r.returncode
    if scenario == "auth/scope-step-up":
        # A call needs more scope than the login got: it fails, naming the
        # scope, which the next login asks for; then the call goes through.
        listed = subprocess.run(crucible + ["tools", "--config", cfg, "--json"], env=env,
                                timeout=120, stdout=subprocess.PIPE, check=True)
        name = json.loads(listed.stdout)[0]["js_name"]
        prog = os.path.join(work, "call.js")
        with open(prog, "w") as f:
            f.write("return await tools.conf.%s({});\n" % name)
        run = crucible + ["run", "--config", cfg, prog]
        if subprocess.run(run, env=env, timeout=120).returncode == 0:
            print("the call with too little scope succeeded", file=sys.stderr)
            return 1
        for s in (["login", "--config", cfg, "--timeout", "60s", "conf"], ["run", "--config", cfg, prog]):
            r = subprocess.run(crucible + s, env=env, timeout=120)
            if r.returncode != 0:
                return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
