"""
Runs az commands, one per line of JSON arguments on stdin, in this one Python process, as Azure CLI's
own scenario tests run theirs (azure.cli.testsdk: `invoke` with an output buffer): the interpreter and
az's modules load once instead of once a command (~1.2 s of CPU each). Answers each with a JSON line:
its exit code, its output and what it wrote to stderr.
"""
import io
import json
import sys

from azure.cli.core import get_default_cli

answers = sys.stdout
# One buffer for the whole session: az's log handlers keep the stderr they first found.
sys.stdout = sys.stderr = err = io.StringIO()
cli = get_default_cli()
for line in sys.stdin:
    err.seek(0)
    err.truncate()
    out = io.StringIO()
    try:
        code = cli.invoke(json.loads(line), out_file=out)
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    answers.write(json.dumps({"code": code or 0, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\n")
    answers.flush()
