"""Writes the golden pstats files of the tests with the running Python.

Usage: python3 gen.py  (in this directory), then
       python3 stats_json.py cprofile.pstats profile.pstats > python.json
cprofile.pstats: cProfile of a small program (named example.py, so that no
path of the machine is recorded) with recursion, built-ins and two call
sites of one function. profile.pstats: the same with the pure Python
profile module, whose callers hold call counts only.
"""
import cProfile
import profile

PROGRAM = '''
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def left():
    return leaf(20000) + len(sorted(range(3000), key=lambda x: -x))


def right():
    return leaf(60000) + fib(15)


def main():
    for _ in range(5):
        left()
        right()
'''

for module, out in ((cProfile, "cprofile.pstats"), (profile, "profile.pstats")):
    ns = {}
    exec(compile(PROGRAM, "example.py", "exec"), ns)
    module.runctx("main()", ns, ns, out)
