"""The oracle scripts' tally: one line per check, `ok` or `FAIL`, and the count of failures."""


class Verdict:
    def __init__(self):
        self.failures = 0

    def check(self, label, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}", flush=True)
        self.failures += 0 if ok else 1
