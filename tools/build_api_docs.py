#!/usr/bin/env python3
"""Builds the API reference with Doxygen: docs/Doxyfile.in over include/ (README.md, "API
reference"). Every Doxygen warning fails the build, an undocumented public function included.

usage: build_api_docs.py DOXYGEN SRCDIR OUTDIR VERSION [--probe]

OUTDIR/html/index.html is the reference; OUTDIR/warnings.log has the warnings. With --probe the
headers are copied, one undocumented function is appended to a copy, and the build must fail
naming it (a check that the gate works): exit 0 when it did.
"""
import os
import shutil
import subprocess
import sys
import tempfile

doxygen, src, out, version = sys.argv[1:5]
probe = "--probe" in sys.argv[5:]


def build(srcdir, outdir):
    os.makedirs(outdir, exist_ok=True)
    conf = open(os.path.join(src, "docs", "Doxyfile.in"), encoding="utf-8").read()
    for key, value in (("@VERSION@", version), ("@OUTPUT@", outdir), ("@SRCDIR@", srcdir),
                       ("@PYTHON@", sys.executable)):
        conf = conf.replace(key, value)
    doxyfile = os.path.join(outdir, "Doxyfile")
    open(doxyfile, "w", encoding="utf-8").write(conf)
    r = subprocess.run([doxygen, doxyfile], cwd=outdir)
    log = os.path.join(outdir, "warnings.log")
    warnings = open(log, encoding="utf-8").read() if os.path.exists(log) else ""
    return r.returncode, warnings


if not probe:
    rc, warnings = build(src, out)
    sys.stdout.write(warnings)
    if rc != 0 or warnings.strip():
        print("the API reference has Doxygen warnings (above): document what they name")
        sys.exit(1)
    print("API reference: " + os.path.join(out, "html", "index.html"))
    sys.exit(0)

with tempfile.TemporaryDirectory() as tmp:
    shutil.copytree(os.path.join(src, "include"), os.path.join(tmp, "include"))
    os.makedirs(os.path.join(tmp, "tools"))
    shutil.copy(os.path.join(src, "tools", "doxygen_filter.py"), os.path.join(tmp, "tools"))
    os.makedirs(os.path.join(tmp, "docs"))
    shutil.copy(os.path.join(src, "docs", "Doxyfile.in"), os.path.join(tmp, "docs"))
    header = os.path.join(tmp, "include", "tirx", "kernels.h")
    text = open(header, encoding="utf-8").read()
    marker = "TIRX_API void tirx_kernels_clear(void);\n"
    assert marker in text, "kernels.h lost tirx_kernels_clear"
    text = text.replace(marker, marker + "\nTIRX_API int tirx_undocumented_probe(int x);\n")
    open(header, "w", encoding="utf-8").write(text)
    src = tmp
    rc, warnings = build(tmp, os.path.join(tmp, "out"))
    if rc != 0 and "tirx_undocumented_probe" in warnings:
        print("an undocumented function fails the build:\n" + warnings)
        sys.exit(0)
    print(f"an undocumented function did not fail the build (doxygen exit {rc}):\n{warnings}")
    sys.exit(1)
