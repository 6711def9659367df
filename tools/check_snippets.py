#!/usr/bin/env python3
"""Checks that README.md quotes the code of examples/walkthrough/ word for word.

A snippet in a source file is the lines between `/* snippet: NAME */` and `/* end snippet */`.
The README quotes it as a fenced block right after a line `<!-- snippet: FILE NAME -->`
(FILE relative to the repository root). Every snippet of every file named must be quoted once,
and every quote must match its snippet exactly: the source is what the build compiles, so the
README cannot drift from the API. Exit status 0 when all match, 1 otherwise (with a diff).

usage: check_snippets.py [REPO_ROOT]
"""
import difflib
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
readme_path = os.path.join(root, "README.md")
readme = open(readme_path, encoding="utf-8").read().split("\n")

quotes = []  # (file, name, text, line)
i = 0
while i < len(readme):
    m = re.fullmatch(r"<!-- snippet: (\S+) (\S+) -->", readme[i].strip())
    if m:
        j = i + 1
        if j >= len(readme) or not readme[j].startswith("```"):
            print(f"README.md:{i + 1}: a snippet marker must be followed by a fenced block")
            sys.exit(1)
        k = j + 1
        while k < len(readme) and readme[k] != "```":
            k += 1
        quotes.append((m.group(1), m.group(2), "\n".join(readme[j + 1:k]), i + 1))
        i = k
    i += 1

snippets = {}  # (file, name) -> text
for f in sorted({q[0] for q in quotes}):
    path = os.path.join(root, f)
    if not os.path.isfile(path):
        print(f"README.md names {f}, which does not exist")
        sys.exit(1)
    lines = open(path, encoding="utf-8").read().split("\n")
    name, body = None, []
    for n, line in enumerate(lines, 1):
        m = re.fullmatch(r"/\* snippet: (\S+) \*/", line.strip())
        if m:
            name, body = m.group(1), []
        elif line.strip() == "/* end snippet */":
            if name is None:
                print(f"{f}:{n}: end snippet without a start")
                sys.exit(1)
            snippets[(f, name)] = "\n".join(body)
            name = None
        elif name is not None:
            body.append(line)

bad = 0
if not quotes:
    print("README.md quotes no snippet")
    bad += 1
for f, name, text, line in quotes:
    want = snippets.get((f, name))
    if want is None:
        print(f"README.md:{line}: {f} has no snippet '{name}'")
        bad += 1
    elif text != want:
        print(f"README.md:{line}: the quote of {f} '{name}' differs from the source:")
        for d in difflib.unified_diff(want.split("\n"), text.split("\n"), f, "README.md",
                                      lineterm=""):
            print(d)
        bad += 1
quoted = {(q[0], q[1]) for q in quotes}
for key in sorted(set(snippets) - quoted):
    print(f"{key[0]}: snippet '{key[1]}' is not quoted in README.md")
    bad += 1
if len(quoted) != len(quotes):
    print("README.md quotes a snippet twice")
    bad += 1
print(f"{len(quotes)} snippets checked, {bad} problems")
sys.exit(1 if bad else 0)
