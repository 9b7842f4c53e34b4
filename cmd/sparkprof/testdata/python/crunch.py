"""A Python-bound program for the py-spy and pyroscope-io tests: its time
is in crunch_numbers, called by outer_loop."""


def crunch_numbers(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def outer_loop(rounds):
    t = 0
    for _ in range(rounds):
        t += crunch_numbers(100000)
    return t


if __name__ == "__main__":
    print(outer_loop(100))
