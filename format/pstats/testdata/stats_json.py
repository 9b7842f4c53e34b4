"""Prints Python's own reading of pstats files as JSON, for the tests.

Usage: python3 stats_json.py FILE...
Prints {FILE: [{"file", "line", "name", "cc", "nc", "tt", "ct",
"callers": [{"file", "line", "name", "edge"}]}]} in the files' order, where
"edge" is the caller's (nc, cc, tt, ct), or its call count.
"""
import json
import pstats
import sys

out = {}
for path in sys.argv[1:]:
    funcs = []
    for (file, line, name), (cc, nc, tt, ct, callers) in pstats.Stats(path).stats.items():
        funcs.append({
            "file": file, "line": line, "name": name,
            "cc": cc, "nc": nc, "tt": tt, "ct": ct,
            "callers": [{"file": f, "line": l, "name": n, "edge": e}
                        for (f, l, n), e in callers.items()],
        })
    out[path] = funcs
json.dump(out, sys.stdout, indent=1)
