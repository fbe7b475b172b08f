"""Build the Cython hot paths under fastkafka/_core.

Every ``fastkafka/_core/*.pyx`` is an extension of the same name; no list to keep in step.
``FASTKAFKA_ONLY=a,b`` builds just those modules (handy while iterating on one).
"""
import glob
import os

from setuptools import Extension, setup
from Cython.Build import cythonize

CORE = os.path.join("fastkafka", "_core")

# -O3 for the per-byte loops; no -march=native: wheels must run on any x86-64, and the
# CRC instruction is chosen at import by cpuid (see crc32c.pyx).
COMPILE_ARGS = ["-O3", "-fno-strict-aliasing", "-Wno-unused-function", "-Wno-unreachable-code"]
LIBRARIES = {"legacy": ["z"],  # zlib's crc32 for magic 0/1 messages
             "tls_read": ["ssl", "crypto"]}  # the OpenSSL CPython's ssl runs on (tls_read.pyx)
OPTIONAL = {"tls_read"}


def extensions():
    only = {m for m in os.environ.get("FASTKAFKA_ONLY", "").split(",") if m}
    exts = []
    for pyx in sorted(glob.glob(os.path.join(CORE, "*.pyx"))):
        name = os.path.splitext(os.path.basename(pyx))[0]
        if only and name not in only:
            continue
        exts.append(
            Extension(
                f"fastkafka._core.{name}",
                [pyx],
                include_dirs=[CORE],
                extra_compile_args=COMPILE_ARGS,
                libraries=LIBRARIES.get(name, []),
                # without OpenSSL's headers the TLS transport reads through Python's ssl instead
                optional=name in OPTIONAL,
            )
        )
    return exts


setup(
    ext_modules=cythonize(
        extensions(),
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
        },
        nthreads=int(os.environ.get("CYTHON_NTHREADS", "2")),
        quiet=True,
    ),
)
