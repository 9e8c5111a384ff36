"""Regenerate the model server's calibration sentences from text on this disk.

The sentences are the first sentences of docstrings in Python 3.11's standard
library (PSF License, compatible with Apache-2.0) plus the Zen of Python:
real English written by people, available offline on every machine that has
Python. Deterministic: the same interpreter gives the same file.

    .venv/bin/python devtools/make_calibration_sentences.py > model-server/forescale_server/calibration_sentences.txt
"""

from __future__ import annotations

import codecs
import contextlib
import importlib
import io
import random
import re
import warnings

MODULES = (
    "os pathlib shutil json csv socket ssl http.client urllib.request email.message logging threading "
    "subprocess asyncio.tasks collections functools itertools datetime calendar decimal fractions statistics "
    "random heapq bisect zipfile tarfile gzip sqlite3 sched queue string textwrap difflib unicodedata locale "
    "gettext argparse getpass tempfile glob fnmatch smtplib ftplib imaplib poplib mailbox mimetypes base64 "
    "hashlib hmac secrets uuid ipaddress html.parser xml.dom.minidom wave colorsys turtle cmd shlex pdb timeit "
    "trace tracemalloc gc inspect dis pickle copy pprint reprlib enum numbers math cmath array weakref types "
    "contextlib abc atexit traceback warnings dataclasses io time signal mmap select selectors "
    "concurrent.futures multiprocessing"
).split()
#: characters that mark code rather than prose
_CODE = re.compile(r"[(){}\[\]=<>_`*|\\]|  |->|\.\.\.|\w\.\w")
COUNT = 300


def docstring_sentences() -> list[str]:
    """First sentences of standard-library docstrings that read as prose."""
    found: set[str] = set()
    for name in MODULES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                module = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a module missing here just contributes nothing
                continue
        for obj in vars(module).values():
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str):
                continue
            para = " ".join(doc.strip().split("\n\n")[0].split())
            sentence = re.split(r"(?<=[.!?])\s", para)[0]
            if 6 <= len(sentence.split()) <= 28 and sentence.endswith(".") and sentence[0].isupper() and not _CODE.search(sentence):
                found.add(sentence)
    return sorted(found)


def zen() -> list[str]:
    """The Zen of Python, one aphorism a line."""
    with contextlib.redirect_stdout(io.StringIO()):
        import this  # noqa: F401  - prints on import
    text = codecs.decode(this.s, "rot13")
    return [line.strip() for line in text.splitlines()[2:] if line.strip()]


def main() -> None:
    sentences = docstring_sentences()
    random.Random(0).shuffle(sentences)
    chosen = zen() + sentences[: COUNT - len(zen())]
    print("# Calibration sentences for the Forescale model server (agreement with fp32, int8 calibration).")
    print("# Source: the Zen of Python and first sentences of Python 3.11 standard-library docstrings (PSF License).")
    print("# Regenerate with devtools/make_calibration_sentences.py.")
    print("\n".join(chosen))


if __name__ == "__main__":
    main()
