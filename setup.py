"""Build of the optional C fast path (msops/_fastpath.c); everything else is in pyproject.toml.

Without a C compiler the extension is skipped and msops runs its pure-Python twin.
"""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("msops._fastpath", ["msops/_fastpath.c"],
                             include_dirs=[numpy.get_include()], optional=True)])
