"""What the campaigns tried and what survived, counted across the session.

Each campaign test records its faults (`tally.fault(kind, survived)`) or its
generated inputs (`tally.cases(surface, n)`). The area's conftest prints the
totals at the end of the run and writes them as JSON under pytest's base temp
folder, so the count is visible without `-s`.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from typing import Iterator
from pathlib import Path


class Tally:
    """Counters of faults tried / survived and input cases tried, by kind."""

    def __init__(self) -> None:
        self.tried: Counter[str] = Counter()
        self.survived: Counter[str] = Counter()
        self.inputs: Counter[str] = Counter()

    def fault(self, kind: str, survived: bool = True) -> None:
        """Count one injected fault; `survived` means every assertion about it held."""
        self.tried[kind] += 1
        if survived:
            self.survived[kind] += 1

    @contextlib.contextmanager
    def attempt(self, kind: str) -> Iterator[None]:
        """`with tally.attempt("prometheus down"):` counts the fault as tried, and as survived if the block passes."""
        self.tried[kind] += 1
        yield
        self.survived[kind] += 1

    def cases(self, surface: str, count: int = 1) -> None:
        """Count generated bad-input cases sent at one surface."""
        self.inputs[surface] += count

    def lines(self) -> list[str]:
        out = []
        if self.tried:
            out.append(f"fault campaign: {sum(self.survived.values())}/{sum(self.tried.values())} faults survived")
            out += [f"  {kind:<34} {self.survived[kind]:>4}/{self.tried[kind]:<4}" for kind in sorted(self.tried)]
        if self.inputs:
            out.append(f"bad-input campaign: {sum(self.inputs.values())} cases tried")
            out += [f"  {surface:<34} {n:>6}" for surface, n in sorted(self.inputs.items())]
        return out

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({"faults": {k: {"tried": self.tried[k], "survived": self.survived[k]} for k in self.tried},
                                    "inputs": dict(self.inputs)}, indent=2))


#: the session's tally (one pytest process)
TALLY = Tally()
