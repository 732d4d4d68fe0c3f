"""The engine under a C/POSIX locale outside Python's UTF-8 mode (LC_ALL=C PYTHONUTF8=0: ASCII, no coercion).

The GPU build read its kernel sources (.cu/.cuh, UTF-8 with a few non-ASCII characters in comments) in the
locale's encoding: a UnicodeDecodeError before the first kernel compiled, on every GPU machine run so."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO

C_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


def test_the_kernel_sources_read_the_same_under_an_ascii_locale():
    script = ("import locale, hashlib; from cuda_kernels.build import sources; "
              "print(locale.getpreferredencoding(False).lower().replace('-', ''), "
              "hashlib.sha256(repr(sorted(sources().items())).encode()).hexdigest())")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    c_locale = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO,
                              env={**env, **C_LOCALE})
    assert c_locale.returncode == 0, c_locale.stderr[-500:]
    utf8 = subprocess.run([sys.executable, "-X", "utf8", "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env=env)
    assert utf8.returncode == 0, utf8.stderr[-500:]
    (c_encoding, c_digest), (utf8_encoding, utf8_digest) = c_locale.stdout.split(), utf8.stdout.split()
    assert (c_encoding, utf8_encoding) != ("utf8", "utf8")  # the first really ran under an ASCII locale
    assert c_digest == utf8_digest
